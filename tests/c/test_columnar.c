/*
 * tests/c/test_columnar.c - fields, columns and batches (columnar/column.h).
 *
 * Expected values are written out by hand in each test (the oracle), never
 * derived from the code under test; the pyarrow oracle for the Arrow layout
 * itself lives in tests/python/test_arrow_c.py.  Every test checks that the
 * live allocation count returns to where it started (leaks).
 */
#include "base/mem.h"
#include "columnar/column.h"
#include "harness.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

static hs_status append_i32(hs_column *c, int32_t v) { return hs_col_append_fixed(c, &v); }
static hs_status append_i64(hs_column *c, int64_t v) { return hs_col_append_fixed(c, &v); }
static hs_status append_f32(hs_column *c, float v) { return hs_col_append_fixed(c, &v); }
static hs_status append_str(hs_column *c, const char *s) { return hs_col_append_bytes(c, s, strlen(s)); }

static void test_field_basics(void)
{
    LEAK_START();
    hs_field schema, id, vec, elem, tags;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&id, "id", HS_TYPE_INT64, false);
    id.field_id = 1;
    CHECK(hs_field_add_child(&schema, &id) == HS_OK);
    hs_field_init(&elem, "item", HS_TYPE_FLOAT32, true);
    hs_field_init(&vec, "v", HS_TYPE_FIXED_LIST, true);
    vec.width = 128;
    CHECK(hs_field_add_child(&vec, &elem) == HS_OK);
    CHECK(hs_field_add_child(&schema, &vec) == HS_OK);
    hs_field_init(&elem, "element", HS_TYPE_STRING, true);
    hs_field_init_list(&tags, "tags", true, &elem);
    CHECK(hs_field_add_child(&schema, &tags) == HS_OK);
    CHECK(hs_field_set_meta(&schema.children[0], "k", "v1") == HS_OK);
    CHECK(hs_field_set_meta(&schema.children[0], "k", "v2") == HS_OK);
    CHECK(schema.children[0].n_meta == 1);
    CHECK(strcmp(hs_field_get_meta(&schema.children[0], "k"), "v2") == 0);
    CHECK(hs_field_get_meta(&schema.children[0], "nope") == NULL);

    hs_buf b = {0};
    CHECK(hs_field_format(&schema, &b) == HS_OK);
    CHECK(strcmp(hs_buf_cstr(&b),
                 "struct<id: int64 not null, v: fixed_size_list<float>[128], tags: list<string>>") == 0);
    hs_buf_free(&b);

    hs_field copy;
    CHECK(hs_field_copy(&schema, &copy) == HS_OK);
    CHECK(hs_field_equals(&schema, &copy, true, true));
    copy.children[0].field_id = 7;
    CHECK(!hs_field_equals(&schema, &copy, true, true));
    CHECK(hs_field_equals(&schema, &copy, true, false));
    copy.children[1].width = 64;
    CHECK(!hs_field_equals(&schema, &copy, false, false));
    hs_field_clear(&copy);
    CHECK(copy.name == NULL && copy.n_children == 0);

    CHECK(strcmp(hs_type_name(HS_TYPE_INT64), "int64") == 0);
    CHECK(hs_type_width(&schema.children[0]) == 8);
    CHECK(hs_type_width(&schema.children[1]) == 0);
    hs_field d;
    hs_field_init(&d, "d", HS_TYPE_DECIMAL128, true);
    CHECK(hs_type_width(&d) == 16);
    hs_field_clear(&d);
    hs_field_clear(&schema);
    hs_field_clear(&schema); /* a zeroed field clears again safely */
    LEAK_END();
}

/* Every fixed-width type: append values and nulls, read them back. */
static void test_fixed_types(void)
{
    LEAK_START();
    static const struct { hs_type t; int w; } types[] = {
        {HS_TYPE_INT8, 1}, {HS_TYPE_INT16, 2}, {HS_TYPE_INT32, 4}, {HS_TYPE_INT64, 8},
        {HS_TYPE_UINT8, 1}, {HS_TYPE_UINT16, 2}, {HS_TYPE_UINT32, 4}, {HS_TYPE_UINT64, 8},
        {HS_TYPE_FLOAT16, 2}, {HS_TYPE_FLOAT32, 4}, {HS_TYPE_FLOAT64, 8},
        {HS_TYPE_DECIMAL128, 16}, {HS_TYPE_DATE32, 4}, {HS_TYPE_TIME32, 4},
        {HS_TYPE_TIME64, 8}, {HS_TYPE_TIMESTAMP, 8},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        hs_field f;
        hs_field_init(&f, "x", types[t].t, true);
        hs_error err_ = {0}, *err = &err_;
        hs_column *c;
        CHECK_OK(hs_col_create(&f, 0, &c, err), err);
        CHECK(c->width == types[t].w);
        uint8_t v[16];
        for (int i = 0; i < 100; i++) {
            if (i % 7 == 3) {
                CHECK(hs_col_append_null(c) == HS_OK);
            } else {
                memset(v, i, sizeof v);
                CHECK(hs_col_append_fixed(c, v) == HS_OK);
            }
        }
        CHECK(c->length == 100);
        CHECK(c->null_count == 14);  /* i = 3, 10, ..., 94 */
        CHECK(c->values.len == 100u * types[t].w);
        for (int i = 0; i < 100; i++) {
            CHECK(hs_col_is_valid(c, i) == (i % 7 != 3));
            if (i % 7 != 3)
                CHECK(c->values.data[(size_t)i * types[t].w + types[t].w - 1] == (uint8_t)i);
        }
        CHECK(((uintptr_t)c->values.data & 63) == 0);
        CHECK_OK(hs_col_validate(c, &f, err), err);
        hs_column *s;
        CHECK_OK(hs_col_slice(c, 0, c->length, &s, err), err);
        CHECK(hs_col_equals(c, s));
        CHECK(s->null_count == 14);
        hs_col_free(s);
        hs_col_free(c);
        hs_field_clear(&f);
    }
    LEAK_END();
}

static void test_bool_and_na(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f;
    hs_field_init(&f, "b", HS_TYPE_BOOL, true);
    hs_column *c;
    CHECK_OK(hs_col_create(&f, 3, &c, err), err);
    /* pattern: T F null T T F F null T F T */
    const int pat[] = {1, 0, -1, 1, 1, 0, 0, -1, 1, 0, 1};
    for (int i = 0; i < 11; i++) {
        uint8_t v = (uint8_t)pat[i];
        CHECK((pat[i] < 0 ? hs_col_append_null(c) : hs_col_append_fixed(c, &v)) == HS_OK);
    }
    CHECK(c->length == 11 && c->null_count == 2);
    for (int i = 0; i < 11; i++) {
        CHECK(hs_col_is_valid(c, i) == (pat[i] >= 0));
        if (pat[i] >= 0)
            CHECK(hs_bit_get(c->values.data, i) == pat[i]);
    }
    CHECK_OK(hs_col_validate(c, &f, err), err);
    /* Slices at odd bit offsets exercise the unaligned bit copy. */
    for (int start = 0; start < 11; start++) {
        hs_column *s;
        CHECK_OK(hs_col_slice(c, start, 11 - start, &s, err), err);
        int nulls = 0;
        for (int i = start; i < 11; i++) {
            nulls += pat[i] < 0;
            CHECK(hs_col_is_valid(s, i - start) == (pat[i] >= 0));
            if (pat[i] >= 0)
                CHECK(hs_bit_get(s->values.data, i - start) == pat[i]);
        }
        CHECK(s->null_count == nulls);
        CHECK_OK(hs_col_validate(s, &f, err), err);
        hs_col_free(s);
    }
    hs_col_free(c);
    hs_field_clear(&f);

    hs_field_init(&f, "n", HS_TYPE_NA, true);
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    CHECK(hs_col_append_nulls(c, 5) == HS_OK);
    CHECK(c->length == 5 && c->null_count == 5);
    CHECK(hs_col_append_fixed(c, "x") == HS_INVALID);
    CHECK_OK(hs_col_validate(c, &f, err), err);
    hs_column *t;
    int64_t idx[] = {4, 0};
    CHECK_OK(hs_col_take(c, idx, 2, &t, err), err);
    CHECK(t->length == 2 && t->null_count == 2);
    hs_col_free(t);
    hs_col_free(c);
    hs_field_clear(&f);
    LEAK_END();
}

static void test_strings(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    hs_column *c;
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    const char *vals[] = {"alpha", "", NULL, "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93", NULL, "z"};
    for (int i = 0; i < 6; i++)
        CHECK((vals[i] ? append_str(c, vals[i]) : hs_col_append_null(c)) == HS_OK);
    CHECK(c->length == 6 && c->null_count == 2);
    const int32_t want_off[] = {0, 5, 5, 5, 14, 14, 15};
    CHECK(memcmp(c->offsets.data, want_off, sizeof want_off) == 0);
    CHECK(memcmp(c->values.data, "alpha\xc3\xa9t\xc3\xa9 \xe2\x9c\x93z", 15) == 0);
    CHECK_OK(hs_col_validate(c, &f, err), err);

    int64_t idx[] = {5, 3, 2, 0, 0};
    hs_column *t;
    CHECK_OK(hs_col_take(c, idx, 5, &t, err), err);
    const int32_t want_t[] = {0, 1, 10, 10, 15, 20};
    CHECK(t->null_count == 1);
    CHECK(memcmp(t->offsets.data, want_t, sizeof want_t) == 0);
    CHECK(memcmp(t->values.data, "z\xc3\xa9t\xc3\xa9 \xe2\x9c\x93" "alphaalpha", 20) == 0);
    CHECK(!hs_col_is_valid(t, 2));
    CHECK_OK(hs_col_validate(t, &f, err), err);

    /* Take out of range is refused. */
    int64_t bad[] = {6};
    hs_column *u = (hs_column *)1;
    hs_error err2 = {0};
    CHECK(hs_col_take(c, bad, 1, &u, &err2) == HS_INVALID);
    CHECK(u == NULL && strstr(err2.msg, "out of range") != NULL);

    /* slice [2, 5) + append gives the same as a take of 2,3,4. */
    hs_column *s;
    CHECK_OK(hs_col_slice(c, 2, 3, &s, err), err);
    CHECK(s->null_count == 2);
    const int32_t want_s[] = {0, 0, 9, 9};
    CHECK(memcmp(s->offsets.data, want_s, sizeof want_s) == 0);
    CHECK_OK(hs_col_append_column(s, c, err), err);
    CHECK(s->length == 9 && s->null_count == 4);
    CHECK_OK(hs_col_validate(s, &f, err), err);
    int64_t idx2[] = {2, 3, 4, 0, 1, 2, 3, 4, 5};
    hs_column *t2;
    CHECK_OK(hs_col_take(c, idx2, 9, &t2, err), err);
    CHECK(hs_col_equals(s, t2));
    CHECK(!hs_col_equals(s, c));
    hs_col_free(t2);
    hs_col_free(s);
    hs_col_free(t);
    hs_col_free(c);

    /* Fixed binary: width enforced. */
    hs_field_clear(&f);
    hs_field_init(&f, "u", HS_TYPE_FIXED_BINARY, false);
    f.width = 16;
    f.ext = HS_EXT_UUID;
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    CHECK(hs_col_append_bytes(c, "0123456789abcdef", 16) == HS_OK);
    CHECK(hs_col_append_bytes(c, "short", 5) == HS_INVALID);
    CHECK(c->length == 1 && c->values.len == 16);
    CHECK_OK(hs_col_validate(c, &f, err), err);
    hs_col_free(c);
    hs_field_clear(&f);
    LEAK_END();
}

/* struct<a: list<struct<x: int32, y: string>>, b: int64> */
static void make_nested_field(hs_field *f)
{
    hs_field x, y, inner, a, b;
    hs_field_init(f, "s", HS_TYPE_STRUCT, true);
    hs_field_init(&inner, "element", HS_TYPE_STRUCT, true);
    hs_field_init(&x, "x", HS_TYPE_INT32, true);
    hs_field_init(&y, "y", HS_TYPE_STRING, true);
    (void)!hs_field_add_child(&inner, &x);
    (void)!hs_field_add_child(&inner, &y);
    hs_field_init_list(&a, "a", true, &inner);
    hs_field_init(&b, "b", HS_TYPE_INT64, false);
    (void)!hs_field_add_child(f, &a);
    (void)!hs_field_add_child(f, &b);
}

/* Rows of the nested column built below (the oracle):
 *   0: {a: [{x:1, y:"p"}, null, {x:null, y:"q"}], b: 10}
 *   1: null
 *   2: {a: null, b: 30}
 *   3: {a: [], b: 40}
 *   4: {a: [{x:5, y:null}], b: 50}
 */
static hs_status append_inner(hs_column *inner, int has, int32_t x, int x_null, const char *y)
{
    if (!has)
        return hs_col_append_null(inner);
    HS_TRY(x_null ? hs_col_append_null(inner->children[0]) : append_i32(inner->children[0], x));
    HS_TRY(y ? append_str(inner->children[1], y) : hs_col_append_null(inner->children[1]));
    return hs_col_struct_append_valid(inner);
}

static hs_status build_nested(hs_column *s)
{
    hs_column *a = s->children[0], *b = s->children[1], *inner = a->children[0];
    HS_TRY(append_inner(inner, 1, 1, 0, "p"));
    HS_TRY(append_inner(inner, 0, 0, 0, NULL));
    HS_TRY(append_inner(inner, 1, 0, 1, "q"));
    HS_TRY(hs_col_list_end(a));
    HS_TRY(append_i64(b, 10));
    HS_TRY(hs_col_struct_append_valid(s));
    HS_TRY(hs_col_append_null(s));
    HS_TRY(hs_col_append_null(a));
    HS_TRY(append_i64(b, 30));
    HS_TRY(hs_col_struct_append_valid(s));
    HS_TRY(hs_col_list_end(a));
    HS_TRY(append_i64(b, 40));
    HS_TRY(hs_col_struct_append_valid(s));
    HS_TRY(append_inner(inner, 1, 5, 0, NULL));
    HS_TRY(hs_col_list_end(a));
    HS_TRY(append_i64(b, 50));
    return hs_col_struct_append_valid(s);
}

static void test_nested_struct_list_struct(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f;
    make_nested_field(&f);
    hs_column *s;
    CHECK_OK(hs_col_create(&f, 2, &s, err), err);
    CHECK(s->n_children == 2 && s->children[0]->n_children == 1 &&
          s->children[0]->children[0]->n_children == 2);
    CHECK(build_nested(s) == HS_OK);
    CHECK_OK(hs_col_validate(s, &f, err), err);
    hs_column *a = s->children[0], *inner = a->children[0];
    CHECK(s->length == 5 && s->null_count == 1);
    CHECK(a->length == 5 && a->null_count == 2);      /* row 1 (parent null) and row 2 */
    CHECK(inner->length == 4 && inner->null_count == 1);
    CHECK(inner->children[0]->null_count == 2);       /* null struct slot + x null */
    CHECK(inner->children[1]->null_count == 2);       /* null struct slot + y null */
    const int32_t want_off[] = {0, 3, 3, 3, 3, 4};
    CHECK(memcmp(a->offsets.data, want_off, sizeof want_off) == 0);
    CHECK(s->children[1]->null_count == 1);           /* b under the null struct row */

    /* take rows 4, 0, 1, 0 */
    int64_t idx[] = {4, 0, 1, 0};
    hs_column *t;
    CHECK_OK(hs_col_take(s, idx, 4, &t, err), err);
    CHECK_OK(hs_col_validate(t, &f, err), err);
    const int32_t want_t[] = {0, 1, 4, 4, 7};
    CHECK(memcmp(t->children[0]->offsets.data, want_t, sizeof want_t) == 0);
    CHECK(t->null_count == 1 && !hs_col_is_valid(t, 2));
    const int32_t *xs = HS_COL_VALUES(t->children[0]->children[0]->children[0], int32_t);
    CHECK(xs[0] == 5 && xs[1] == 1 && xs[4] == 1);

    /* Equal to a column built directly in the same row order. */
    hs_column *e;
    CHECK_OK(hs_col_create(&f, 0, &e, err), err);
    hs_column *ea = e->children[0], *eb = e->children[1], *ei = ea->children[0];
    CHECK(append_inner(ei, 1, 5, 0, NULL) == HS_OK);
    CHECK(hs_col_list_end(ea) == HS_OK);
    CHECK(append_i64(eb, 50) == HS_OK);
    CHECK(hs_col_struct_append_valid(e) == HS_OK);
    for (int k = 0; k < 3; k++) {
        if (k == 1) {
            CHECK(hs_col_append_null(e) == HS_OK);
            continue;
        }
        CHECK(append_inner(ei, 1, 1, 0, "p") == HS_OK);
        CHECK(append_inner(ei, 0, 0, 0, NULL) == HS_OK);
        CHECK(append_inner(ei, 1, 0, 1, "q") == HS_OK);
        CHECK(hs_col_list_end(ea) == HS_OK);
        CHECK(append_i64(eb, 10) == HS_OK);
        CHECK(hs_col_struct_append_valid(e) == HS_OK);
    }
    CHECK(hs_col_equals(t, e));
    /* Change a value under a null slot: still equal.  Change a valid one: not. */
    HS_COL_VALUES(e->children[1], int64_t)[2] = 999;
    CHECK(hs_col_equals(t, e));
    HS_COL_VALUES(e->children[1], int64_t)[3] = 11;
    CHECK(!hs_col_equals(t, e));
    HS_COL_VALUES(e->children[1], int64_t)[3] = 10;
    memcpy(ei->children[1]->values.data + HS_COL_OFFSETS(ei->children[1])[2], "Q", 1);
    CHECK(!hs_col_equals(t, e));
    hs_col_free(e);

    /* slice [1, 4) then append the whole column; check against a take. */
    hs_column *sl;
    CHECK_OK(hs_col_slice(s, 1, 3, &sl, err), err);
    CHECK_OK(hs_col_validate(sl, &f, err), err);
    CHECK(sl->children[0]->children[0]->length == 0);
    CHECK_OK(hs_col_append_column(sl, s, err), err);
    CHECK_OK(hs_col_validate(sl, &f, err), err);
    int64_t idx2[] = {1, 2, 3, 0, 1, 2, 3, 4};
    hs_column *t2;
    CHECK_OK(hs_col_take(s, idx2, 8, &t2, err), err);
    CHECK(hs_col_equals(sl, t2));
    CHECK(sl->null_count == 2);
    hs_col_free(t2);
    hs_col_free(sl);
    hs_col_free(t);
    hs_col_free(s);
    hs_field_clear(&f);
    LEAK_END();
}

static void make_map_field(hs_field *f)
{
    hs_field k, v, entries;
    hs_field_init(f, "m", HS_TYPE_MAP, true);
    hs_field_init(&entries, "entries", HS_TYPE_STRUCT, false);
    hs_field_init(&k, "key", HS_TYPE_STRING, false);
    hs_field_init(&v, "value", HS_TYPE_INT64, true);
    (void)!hs_field_add_child(&entries, &k);
    (void)!hs_field_add_child(&entries, &v);
    (void)!hs_field_add_child(f, &entries);
}

static void test_map_with_null_values(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f;
    make_map_field(&f);
    hs_column *m;
    CHECK_OK(hs_col_create(&f, 0, &m, err), err);
    hs_column *e = m->children[0], *k = e->children[0], *v = e->children[1];
    /* rows: {a:1, b:null}, null, {}, {c:3} */
    CHECK(append_str(k, "a") == HS_OK && append_i64(v, 1) == HS_OK);
    CHECK(hs_col_struct_append_valid(e) == HS_OK);
    CHECK(append_str(k, "b") == HS_OK && hs_col_append_null(v) == HS_OK);
    CHECK(hs_col_struct_append_valid(e) == HS_OK);
    CHECK(hs_col_list_end(m) == HS_OK);
    CHECK(hs_col_append_null(m) == HS_OK);
    CHECK(hs_col_list_end(m) == HS_OK);
    CHECK(append_str(k, "c") == HS_OK && append_i64(v, 3) == HS_OK);
    CHECK(hs_col_struct_append_valid(e) == HS_OK);
    CHECK(hs_col_list_end(m) == HS_OK);
    CHECK_OK(hs_col_validate(m, &f, err), err);
    CHECK(m->length == 4 && m->null_count == 1 && e->length == 3 && v->null_count == 1);
    CHECK(k->validity.data == NULL);
    const int32_t want[] = {0, 2, 2, 2, 3};
    CHECK(memcmp(m->offsets.data, want, sizeof want) == 0);

    int64_t idx[] = {3, 0};
    hs_column *t;
    CHECK_OK(hs_col_take(m, idx, 2, &t, err), err);
    CHECK_OK(hs_col_validate(t, &f, err), err);
    CHECK(t->children[0]->length == 3);
    CHECK(memcmp(t->children[0]->children[0]->values.data, "cab", 3) == 0);
    CHECK(!hs_col_is_valid(t->children[0]->children[1], 2));
    CHECK(HS_COL_VALUES(t->children[0]->children[1], int64_t)[0] == 3);
    hs_col_free(t);

    /* A null key is corrupt. */
    CHECK(hs_col_append_null(k) == HS_OK && append_i64(v, 4) == HS_OK);
    CHECK(hs_col_struct_append_valid(e) == HS_OK && hs_col_list_end(m) == HS_OK);
    hs_error err2 = {0};
    CHECK(hs_col_validate(m, &f, &err2) == HS_CORRUPT);
    CHECK(strstr(err2.msg, "null keys") != NULL);
    hs_col_free(m);
    hs_field_clear(&f);
    LEAK_END();
}

static void test_fixed_list_f32_128(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f, el;
    hs_field_init(&el, "item", HS_TYPE_FLOAT32, true);
    hs_field_init(&f, "v", HS_TYPE_FIXED_LIST, true);
    f.width = 128;
    CHECK(hs_field_add_child(&f, &el) == HS_OK);
    hs_column *c;
    CHECK_OK(hs_col_create(&f, 4, &c, err), err);
    CHECK(c->width == 128);
    for (int r = 0; r < 10; r++) {
        if (r == 4) {
            CHECK(hs_col_append_null(c) == HS_OK);
            continue;
        }
        for (int j = 0; j < 128; j++)
            CHECK(append_f32(c->children[0], r == 7 && j == 5 ? NAN : (float)(r * 1000 + j)) == HS_OK);
        CHECK(hs_col_list_end(c) == HS_OK);
    }
    CHECK(hs_col_list_end(c) == HS_INVALID);  /* no elements appended */
    CHECK(c->length == 10 && c->null_count == 1 && c->children[0]->length == 1280);
    CHECK(c->children[0]->null_count == 128);
    CHECK_OK(hs_col_validate(c, &f, err), err);

    int64_t idx[] = {9, 7, 4};
    hs_column *t;
    CHECK_OK(hs_col_take(c, idx, 3, &t, err), err);
    CHECK_OK(hs_col_validate(t, &f, err), err);
    const float *tv = HS_COL_VALUES(t->children[0], float);
    CHECK(tv[0] == 9000.0f && tv[127] == 9127.0f && tv[128] == 7000.0f && isnan(tv[133]));
    CHECK(!hs_col_is_valid(t, 2) && !hs_col_is_valid(t->children[0], 256));

    hs_column *s;
    CHECK_OK(hs_col_slice(c, 7, 3, &s, err), err);
    int64_t idx2[] = {7, 8, 9};
    hs_column *t2;
    CHECK_OK(hs_col_take(c, idx2, 3, &t2, err), err);
    CHECK(hs_col_equals(s, t2));  /* NaN == NaN bitwise */
    HS_COL_VALUES(t2->children[0], float)[1] = -0.0f;
    HS_COL_VALUES(s->children[0], float)[1] = 0.0f;
    CHECK(!hs_col_equals(s, t2));  /* bitwise: -0 != +0 */
    hs_col_free(t2);
    hs_col_free(s);
    hs_col_free(t);
    hs_col_free(c);
    hs_field_clear(&f);
    LEAK_END();
}

/* Lists with the same logical values but different offsets are equal. */
static void test_equals_offsets(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field el, f;
    hs_field_init(&el, "item", HS_TYPE_INT32, true);
    hs_field_init_list(&f, "l", true, &el);
    hs_column *a, *b;
    CHECK_OK(hs_col_create(&f, 0, &a, err), err);
    CHECK_OK(hs_col_create(&f, 0, &b, err), err);
    /* a = [[9, 9], [1, 2], null, [3]] ; b = [[1, 2], null, [3]] */
    CHECK(append_i32(a->children[0], 9) == HS_OK && append_i32(a->children[0], 9) == HS_OK);
    CHECK(hs_col_list_end(a) == HS_OK);
    CHECK(append_i32(a->children[0], 1) == HS_OK && append_i32(a->children[0], 2) == HS_OK);
    CHECK(hs_col_list_end(a) == HS_OK);
    CHECK(hs_col_append_null(a) == HS_OK);
    CHECK(append_i32(a->children[0], 3) == HS_OK && hs_col_list_end(a) == HS_OK);
    CHECK(append_i32(b->children[0], 1) == HS_OK && append_i32(b->children[0], 2) == HS_OK);
    CHECK(hs_col_list_end(b) == HS_OK);
    CHECK(hs_col_append_null(b) == HS_OK);
    CHECK(append_i32(b->children[0], 3) == HS_OK && hs_col_list_end(b) == HS_OK);
    CHECK(!hs_col_equals(a, b));
    /* Shift a's view by hand: drop row 0 by moving the offsets pointer. */
    hs_column view = *a;
    view.offsets.data += 4;
    view.length = 3;
    view.validity.data = NULL;
    view.null_count = 0;
    CHECK(!hs_col_equals(&view, b));  /* b has a null, view none */
    CHECK_OK(hs_col_ensure_validity(b), err);
    hs_col_free(b);
    hs_column *s;
    CHECK_OK(hs_col_slice(a, 1, 3, &s, err), err);
    CHECK(HS_COL_OFFSETS(s)[1] == 2 && HS_COL_OFFSETS(a)[2] == 4);
    /* logical equality despite different offsets */
    hs_column *bb;
    CHECK_OK(hs_col_create(&f, 0, &bb, err), err);
    CHECK(append_i32(bb->children[0], 1) == HS_OK && append_i32(bb->children[0], 2) == HS_OK);
    CHECK(hs_col_list_end(bb) == HS_OK && hs_col_append_null(bb) == HS_OK);
    CHECK(append_i32(bb->children[0], 3) == HS_OK && hs_col_list_end(bb) == HS_OK);
    CHECK(hs_col_equals(s, bb));
    /* Arrow-valid view of a with offsets[0] != 0 validates loosely, not strictly. */
    hs_column v2 = *a;  /* rows [1, 2], [], [3] with offsets 2, 4, 4, 5 */
    v2.offsets.data += 4;
    v2.length = 3;
    v2.offsets.len -= 4;
    v2.validity.data = NULL;
    v2.null_count = 0;
    hs_error e1 = {0}, e2 = {0};
    CHECK(hs_col_validate_arrow(&v2, &f, &e1) == HS_OK);
    CHECK(hs_col_validate(&v2, &f, &e2) == HS_CORRUPT);
    CHECK(!hs_col_equals(&v2, bb));
    hs_column *cc;
    CHECK_OK(hs_col_create(&f, 0, &cc, err), err);
    CHECK(append_i32(cc->children[0], 1) == HS_OK && append_i32(cc->children[0], 2) == HS_OK);
    CHECK(hs_col_list_end(cc) == HS_OK && hs_col_list_end(cc) == HS_OK);
    CHECK(append_i32(cc->children[0], 3) == HS_OK && hs_col_list_end(cc) == HS_OK);
    CHECK(hs_col_equals(&v2, cc));
    hs_column *cs;  /* and its compact copy */
    CHECK_OK(hs_col_slice(&v2, 0, 3, &cs, err), err);
    CHECK(HS_COL_OFFSETS(cs)[0] == 0 && cs->children[0]->length == 3);
    CHECK_OK(hs_col_validate(cs, &f, err), err);
    CHECK(hs_col_equals(cs, cc));
    hs_col_free(cs);
    hs_col_free(cc);
    hs_col_free(bb);
    hs_col_free(s);

    /* Arrow allows a null list row to own elements; our columns do not:
     * a = [[9, 9], [1, 2], null, [3]] with row 1 turned null by hand. */
    hs_bit_clear(a->validity.data, 1);
    a->null_count = 2;
    hs_error e3 = {0};
    CHECK(hs_col_validate_arrow(a, &f, &e3) == HS_OK);
    CHECK(hs_col_validate(a, &f, &e3) == HS_CORRUPT && strstr(e3.msg, "null row 1 owns 2 elements"));
    hs_column *fixed;
    CHECK_OK(hs_col_slice(a, 0, 4, &fixed, err), err);
    CHECK_OK(hs_col_validate(fixed, &f, err), err);
    CHECK(fixed->children[0]->length == 3 && hs_col_equals(fixed, a));
    const int32_t want_fixed[] = {0, 2, 2, 2, 3};
    CHECK(memcmp(fixed->offsets.data, want_fixed, sizeof want_fixed) == 0);
    int64_t tidx[] = {1, 0};
    hs_column *tk;
    CHECK_OK(hs_col_take(a, tidx, 2, &tk, err), err);
    CHECK(tk->children[0]->length == 2 && tk->null_count == 1);
    CHECK_OK(hs_col_validate(tk, &f, err), err);
    hs_col_free(tk);
    hs_col_free(fixed);
    hs_col_free(a);
    hs_field_clear(&f);
    LEAK_END();
}

static void test_validate_catches_breakage(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    hs_column *c;
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    CHECK(append_str(c, "abc") == HS_OK && append_str(c, "de") == HS_OK && hs_col_append_null(c) == HS_OK);
    CHECK_OK(hs_col_validate(c, &f, err), err);

    int32_t *off = HS_COL_OFFSETS(c);
    off[1] = 4;  /* 4 > offsets[2] = 5? no: make it non-monotone */
    off[1] = 6;
    hs_error e = {0};
    CHECK(hs_col_validate(c, &f, &e) == HS_CORRUPT);
    CHECK(strstr(e.msg, "offsets[2] = 5 < offsets[1] = 6") != NULL);
    CHECK(e.src_file != NULL);
    off[1] = 3;
    off[3] = 100;  /* past the values */
    off[2] = 50;
    hs_error e2 = {0};
    CHECK(hs_col_validate(c, &f, &e2) == HS_CORRUPT);
    CHECK(strstr(e2.msg, "past") != NULL);
    off[2] = 5;
    off[3] = 5;
    c->null_count = 0;
    hs_error e3 = {0};
    CHECK(hs_col_validate(c, &f, &e3) == HS_CORRUPT);
    CHECK(strstr(e3.msg, "null_count 0") != NULL);
    c->null_count = 1;
    CHECK_OK(hs_col_validate(c, &f, err), err);
    hs_field g;
    hs_field_init(&g, "s", HS_TYPE_BINARY, true);
    hs_error e4 = {0};
    CHECK(hs_col_validate(c, &g, &e4) == HS_CORRUPT);
    hs_field_clear(&g);
    hs_col_free(c);
    hs_field_clear(&f);

    /* struct child too short, list offsets past the child */
    make_nested_field(&f);
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    CHECK(build_nested(c) == HS_OK);
    c->children[1]->length = 4;
    hs_error e5 = {0};
    CHECK(hs_col_validate(c, &f, &e5) == HS_CORRUPT);
    CHECK(strstr(e5.msg, "child 'b' has 4 rows") != NULL);
    c->children[1]->length = 5;
    HS_COL_OFFSETS(c->children[0])[5] = 9;
    hs_error e6 = {0};
    CHECK(hs_col_validate(c, &f, &e6) == HS_CORRUPT);
    CHECK(strstr(e6.msg, "offsets end at 9") != NULL);
    HS_COL_OFFSETS(c->children[0])[5] = 4;
    CHECK_OK(hs_col_validate(c, &f, err), err);
    hs_col_free(c);
    hs_field_clear(&f);
    LEAK_END();
}

static void test_growth_amortized(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f;
    hs_field_init(&f, "x", HS_TYPE_INT64, true);
    hs_column *c;
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    int moves = 0;
    const uint8_t *prev = NULL;
    for (int64_t i = 0; i < 200000; i++) {
        if (i % 1000 == 999)
            CHECK(hs_col_append_null(c) == HS_OK);
        else
            CHECK(append_i64(c, i) == HS_OK);
        if (c->values.data != prev) {
            moves++;
            prev = c->values.data;
        }
    }
    CHECK(moves < 30);   /* geometric growth: ~log2(1.6 MB / 64) */
    CHECK(c->null_count == 200);
    CHECK(c->values.cap >= c->values.len && c->values.cap <= 2 * c->values.len + 64);
    CHECK_OK(hs_col_reserve(c, 1000, 0), err);
    size_t cap = c->values.cap;
    for (int i = 0; i < 1000; i++)
        CHECK(append_i64(c, i) == HS_OK);
    CHECK(c->values.cap == cap);  /* reserve really reserved */
    CHECK_OK(hs_col_validate(c, &f, err), err);
    hs_col_free(c);
    hs_field_clear(&f);
    LEAK_END();
}

static void test_bulk_and_bits(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field f;
    hs_field_init(&f, "x", HS_TYPE_INT16, true);
    hs_column *c;
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    const int16_t v[5] = {1, -2, 3, -4, 5};
    CHECK(hs_col_append_null(c) == HS_OK);
    CHECK(hs_col_append_fixed_n(c, v, 5) == HS_OK);
    CHECK(c->length == 6 && c->null_count == 1 && HS_COL_VALUES(c, int16_t)[5] == 5);
    CHECK(hs_col_is_valid(c, 5) && !hs_col_is_valid(c, 0));
    CHECK_OK(hs_col_validate(c, &f, err), err);
    hs_col_free(c);
    hs_field_clear(&f);
    hs_field_init(&f, "b", HS_TYPE_BOOL, false);
    CHECK_OK(hs_col_create(&f, 0, &c, err), err);
    const uint8_t bv[4] = {1, 0, 7, 0};
    CHECK(hs_col_append_fixed_n(c, bv, 4) == HS_OK);
    CHECK(c->values.data[0] == 0x05 && c->validity.data == NULL);
    hs_col_free(c);
    hs_field_clear(&f);

    /* bit copy at every pair of offsets against a bit-by-bit oracle */
    uint8_t src[16], dst[16], want[16];
    for (int i = 0; i < 16; i++)
        src[i] = (uint8_t)(i * 37 + 11);
    for (int so = 0; so < 17; so++) {
        for (int d0 = 0; d0 < 17; d0++) {
            for (int n = 0; n < 80; n += 7) {
                memset(dst, 0xa5, sizeof dst);
                memcpy(want, dst, sizeof want);
                for (int i = 0; i < n; i++) {
                    if ((src[(so + i) >> 3] >> ((so + i) & 7)) & 1)
                        want[(d0 + i) >> 3] |= (uint8_t)(1u << ((d0 + i) & 7));
                    else
                        want[(d0 + i) >> 3] &= (uint8_t)~(1u << ((d0 + i) & 7));
                }
                hs_bits_copy(dst, d0, src, so, n);
                CHECK(memcmp(dst, want, sizeof dst) == 0);
                int64_t cnt = 0;
                for (int i = 0; i < n; i++)
                    cnt += (src[(so + i) >> 3] >> ((so + i) & 7)) & 1;
                CHECK(hs_bits_count(src, so, n) == cnt);
            }
        }
    }
    LEAK_END();
}

static void test_batch(void)
{
    LEAK_START();
    hs_error err_ = {0}, *err = &err_;
    hs_field schema, id;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&id, "id", HS_TYPE_INT64, false);
    CHECK(hs_field_add_child(&schema, &id) == HS_OK);
    hs_field m;
    make_map_field(&m);
    CHECK(hs_field_add_child(&schema, &m) == HS_OK);
    hs_batch *b;
    CHECK_OK(hs_batch_create(&schema, 16, &b, err), err);
    CHECK(b->n_cols == 2 && b->n_rows == 0);
    CHECK(hs_batch_find(b, "m") == 1 && hs_batch_find(b, "id") == 0 && hs_batch_find(b, "x") == -1);
    CHECK(b->cols[1]->type == HS_TYPE_MAP && b->cols[1]->children[0]->n_children == 2);
    CHECK(hs_field_equals(&b->schema, &schema, true, true));
    hs_batch_free(b);
    hs_batch_free(NULL);
    hs_col_free(NULL);

    hs_field bad;
    hs_field_init(&bad, "x", HS_TYPE_INT32, true);
    hs_error e = {0};
    CHECK(hs_batch_create(&bad, 0, &b, &e) == HS_INVALID && b == NULL);
    hs_field_clear(&bad);
    hs_field_init(&bad, "l", HS_TYPE_LIST, true);  /* list without a child */
    hs_column *c = NULL;
    hs_error e2 = {0};
    CHECK(hs_col_create(&bad, 0, &c, &e2) == HS_INVALID && c == NULL);
    CHECK(strstr(e2.msg, "needs 1 child") != NULL);
    hs_field_clear(&bad);
    hs_field_clear(&schema);
    LEAK_END();
}

/* Out-of-memory at every allocation of a nested build + take + slice: no
 * crash, no leak. */
static void test_oom_loop(void)
{
    LEAK_START();
    hs_field f;
    make_nested_field(&f);
    int succeeded = 0, k;
    for (k = 1; k < 400 && !succeeded; k++) {
        hs_mem_fail_after(k);
        hs_column *s = NULL, *t = NULL, *sl = NULL;
        hs_status st = hs_col_create(&f, 0, &s, NULL);
        if (st == HS_OK)
            st = build_nested(s);
        int64_t idx[] = {4, 0, 1, 0, 3};
        if (st == HS_OK)
            st = hs_col_take(s, idx, 5, &t, NULL);
        if (st == HS_OK)
            st = hs_col_slice(s, 1, 4, &sl, NULL);
        if (st == HS_OK)
            st = hs_col_append_column(sl, t, NULL);
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM || st == HS_INVALID);
        if (st == HS_OK) {
            succeeded = 1;
            CHECK(hs_col_validate(sl, &f, NULL) == HS_OK);
        }
        hs_col_free(s);
        hs_col_free(t);
        hs_col_free(sl);
    }
    CHECK(succeeded);
    CHECK(k > 50);  /* many allocation points were really failed */
    hs_field_clear(&f);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_field_basics);
    HS_RUN(test_fixed_types);
    HS_RUN(test_bool_and_na);
    HS_RUN(test_strings);
    HS_RUN(test_nested_struct_list_struct);
    HS_RUN(test_map_with_null_values);
    HS_RUN(test_fixed_list_f32_128);
    HS_RUN(test_equals_offsets);
    HS_RUN(test_validate_catches_breakage);
    HS_RUN(test_growth_amortized);
    HS_RUN(test_bulk_and_bits);
    HS_RUN(test_batch);
    HS_RUN(test_oom_loop);
    return hs_test_summary();
}
