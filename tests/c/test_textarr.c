/*
 * tests/c/test_textarr.c - text[] values (expr/textarr.h): the blob built
 * by ta_b_* and ta_in, PostgreSQL's array_in / array_out text forms,
 * array_cmp order, @> and &&, and their memory: every allocation freed
 * (leak count around each test), an out-of-memory failure at every
 * allocation of ta_in and of the builder leaves nothing behind.  Runs under
 * ASan+UBSan (make build-asan).
 *
 * Oracle: the expected texts are what the PostgreSQL 15 reference server
 * (../shared/oracles/postgres-pgvector.sh) printed for `SELECT '<in>'::text[]`
 * (tests/python/test_sql_textarr_pg.py compares the SQL forms with it).
 */
#include "harness.h"
#include "expr_oom.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/mem.h"
#include "columnar/column.h"
#include "expr/expr.h"
#include "expr/textarr.h"

#include <stdio.h>
#include <string.h>

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

static void io(const char *in, const char *out, hs_status want)
{
    hs_arena a = {0};
    hs_error err = {0};
    pv_val v;
    hs_status st = ta_in(in, strlen(in), &a, &v, &err);
    CHECK(st == want);
    if (st != want)
        fprintf(stderr, "  %s: status %d (%s)\n", in, (int)st, err.msg);
    if (st == HS_OK && out) {
        CHECK(ta_valid(v));
        hs_buf b = {0};
        CHECK(ta_out(v, &b) == HS_OK);
        bool same = b.len == strlen(out) && memcmp(b.data, out, b.len) == 0;
        CHECK(same);
        if (!same)
            fprintf(stderr, "  %s: got %.*s, want %s\n", in, (int)b.len, (const char *)b.data, out);
        hs_buf_free(&b);
    }
    if (st == HS_INVALID)
        CHECK(strncmp(err.msg, "malformed array literal", 23) == 0);
    hs_arena_destroy(&a);
}

static void test_text_io(void)
{
    LEAK_START();
    io("{a,b,\"c d\",NULL}", "{a,b,\"c d\",NULL}", HS_OK);
    io("{}", "{}", HS_OK);
    io("  { }  ", "{}", HS_OK);
    io("{ a , b }", "{a,b}", HS_OK);
    io("{\"\",\"NULL\",null,NuLl}", "{\"\",\"NULL\",NULL,NULL}", HS_OK);
    io("{\"a,b\",\"c\\\\d\",\"e\\\"f\"}", "{\"a,b\",\"c\\\\d\",\"e\\\"f\"}", HS_OK);
    io("{a\\,b}", "{\"a,b\"}", HS_OK);
    io("{a b c}", "{\"a b c\"}", HS_OK);
    io("{\"{}\"}", "{\"{}\"}", HS_OK);
    io("{ä,日本}", "{ä,日本}", HS_OK);
    io("{\\ x}", "{\" x\"}", HS_OK);
    io("{a", NULL, HS_INVALID);
    io("a,b", NULL, HS_INVALID);
    io("{a,}", NULL, HS_INVALID);
    io("{,a}", NULL, HS_INVALID);
    io("{a}x", NULL, HS_INVALID);
    io("{\"a\"b}", NULL, HS_INVALID);
    io("{\"a", NULL, HS_INVALID);
    io("{a\\", NULL, HS_INVALID);
    io("", NULL, HS_INVALID);
    io("{{a},{b}}", NULL, HS_UNSUPPORTED);
    io("[1:2]={a,b}", NULL, HS_UNSUPPORTED);
    LEAK_END();
}

static pv_val mk(hs_arena *a, const char *in)
{
    hs_error err = {0};
    pv_val v = {NULL, 0};
    hs_status st = ta_in(in, strlen(in), a, &v, &err);
    CHECK(st == HS_OK);
    return v;
}

static void test_order_and_containment(void)
{
    LEAK_START();
    hs_arena a = {0};
    /* array_cmp: elementwise, NULL after values, then the shorter first */
    CHECK(ta_cmp(mk(&a, "{a,b}"), mk(&a, "{a}")) > 0);
    CHECK(ta_cmp(mk(&a, "{a,NULL}"), mk(&a, "{a,b}")) > 0);
    CHECK(ta_cmp(mk(&a, "{a,NULL}"), mk(&a, "{a,NULL}")) == 0);
    CHECK(ta_cmp(mk(&a, "{}"), mk(&a, "{\"\"}")) < 0);
    CHECK(ta_cmp(mk(&a, "{B}"), mk(&a, "{a}")) < 0);   /* C collation: bytes */
    CHECK(ta_cmp(mk(&a, "{ab}"), mk(&a, "{a}")) > 0);
    /* @>: a NULL element of the right side never matches; && needs one hit */
    CHECK(ta_contains(mk(&a, "{a,NULL,b}"), mk(&a, "{b,a}"), false));
    CHECK(!ta_contains(mk(&a, "{a,NULL}"), mk(&a, "{NULL}"), false));
    CHECK(ta_contains(mk(&a, "{a}"), mk(&a, "{}"), false));
    CHECK(!ta_contains(mk(&a, "{a}"), mk(&a, "{}"), true));
    CHECK(ta_contains(mk(&a, "{a,\"\"}"), mk(&a, "{x,\"\"}"), true));
    CHECK(!ta_contains(mk(&a, "{a}"), mk(&a, "{NULL,b}"), true));
    hs_arena_destroy(&a);
    LEAK_END();
}

static void test_builder(void)
{
    LEAK_START();
    hs_arena a = {0};
    ta_builder b = {0};
    CHECK(ta_b_add(&b, "x", 1, false) == HS_OK);
    CHECK(ta_b_add(&b, NULL, 0, true) == HS_OK);
    CHECK(ta_b_add(&b, "", 0, false) == HS_OK);
    pv_val v;
    REQUIRE(ta_b_done(&b, &a, &v) == HS_OK);
    CHECK(ta_len(v) == 3 && ta_has_null(v) && ta_valid(v));
    const uint8_t *p;
    size_t n;
    CHECK(ta_get(v, 0, &p, &n) && n == 1 && p[0] == 'x');
    CHECK(!ta_get(v, 1, &p, &n));
    CHECK(ta_get(v, 2, &p, &n) && n == 0);
    /* a range of another blob */
    ta_builder b2 = {0};
    CHECK(ta_b_add_range(&b2, v, 1, 3) == HS_OK);
    pv_val w;
    REQUIRE(ta_b_done(&b2, &a, &w) == HS_OK);
    CHECK(ta_len(w) == 2 && ta_cmp(w, mk(&a, "{NULL,\"\"}")) == 0);
    /* malformed blobs are refused by ta_valid */
    uint8_t bad[16] = {0};
    int32_t n5 = 5;
    memcpy(bad, &n5, 4);
    pv_val bv = {bad, sizeof bad};
    CHECK(!ta_valid(bv));
    /* a builder given up on frees its buffers */
    ta_builder b3 = {0};
    CHECK(ta_b_add(&b3, "abc", 3, false) == HS_OK);
    ta_b_free(&b3);
    hs_arena_destroy(&a);
    LEAK_END();
}

/* An allocation failure at every step of ta_in: HS_NOMEM, nothing leaked. */
static void test_out_of_memory(void)
{
    LEAK_START();
    const char *in = "{alpha,\"beta gamma\",NULL,delta,\"\",epsilon,zeta,eta,theta,iota,kappa}";
    bool succeeded = false;
    for (int64_t nth = 1; nth < 200 && !succeeded; nth++) {
        hs_arena a = {0};
        hs_error err = {0};
        pv_val v;
        hs_mem_fail_after(nth);
        hs_status st = ta_in(in, strlen(in), &a, &v, &err);
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM);
        if (st == HS_OK) {
            succeeded = true;
            hs_buf b = {0};
            CHECK(ta_out(v, &b) == HS_OK);
            CHECK(b.len == strlen(in) - 0 && memcmp(b.data, in, b.len) == 0);
            hs_buf_free(&b);
        }
        hs_arena_destroy(&a);
    }
    CHECK(succeeded);
    LEAK_END();
}

/* A batch of tags list<string> (["red","big"], [NULL, ""], NULL, []) and
 * s string ("big,x", "", NULL, "a b"). */
static hs_batch *tags_batch(hs_error *err)
{
    hs_field schema, item, tags, sf;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&item, "item", HS_TYPE_STRING, true);
    hs_field_init_list(&tags, "tags", true, &item);
    tags.field_id = 1;
    hs_field_init(&sf, "s", HS_TYPE_STRING, true);
    sf.field_id = 2;
    if (hs_field_add_child(&schema, &tags) != HS_OK || hs_field_add_child(&schema, &sf) != HS_OK)
        return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, 4, &b, err);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    hs_column *ct = b->cols[0], *cs = b->cols[1];
    bool ok = hs_col_append_bytes(ct->children[0], (const uint8_t *)"red", 3) == HS_OK &&
              hs_col_append_bytes(ct->children[0], (const uint8_t *)"big", 3) == HS_OK &&
              hs_col_list_end(ct) == HS_OK && hs_col_append_null(ct->children[0]) == HS_OK &&
              hs_col_append_bytes(ct->children[0], (const uint8_t *)"", 0) == HS_OK &&
              hs_col_list_end(ct) == HS_OK && hs_col_append_null(ct) == HS_OK &&
              hs_col_list_end(ct) == HS_OK &&
              hs_col_append_bytes(cs, (const uint8_t *)"big,x", 5) == HS_OK &&
              hs_col_append_bytes(cs, (const uint8_t *)"", 0) == HS_OK && hs_col_append_null(cs) == HS_OK &&
              hs_col_append_bytes(cs, (const uint8_t *)"a b", 3) == HS_OK;
    b->n_rows = 4;
    if (!ok) {
        hs_batch_free(b);
        return NULL;
    }
    return b;
}

static bool text_is(const hs_column *c, int64_t i, const char *want)
{
    if (!want)
        return !hs_col_is_valid(c, i);
    const int32_t *o = HS_COL_OFFSETS(c);
    size_t n = (size_t)(o[i + 1] - o[i]);
    bool same = hs_col_is_valid(c, i) && n == strlen(want) &&
                (n == 0 || memcmp(c->values.data + o[i], want, n) == 0);
    if (!same)
        fprintf(stderr, "  row %lld: got %.*s, want %s\n", (long long)i, (int)n,
                (const char *)c->values.data + o[i], want);
    return same;
}

/* text[] expressions over a list<string> column: values, a list<string>
 * result column, a filter, and an out-of-memory failure at every
 * allocation of a bind + evaluation (nothing leaked on any path). */
static void test_expressions(void)
{
    LEAK_START();
    hs_error err = {0};
    hs_batch *b = tags_batch(&err);
    REQUIRE(b);
    ex_expr *e = NULL;
    CHECK_OK(ex_parse_scalar("array_to_string(array_append(tags, s) || string_to_array(s, ','), '|', '?')::text",
                             &b->schema, &e, &err), &err);
    hs_column *out = NULL;
    CHECK_OK(ex_eval(e, b, &out, &err), &err);
    REQUIRE(out && out->length == 4);
    CHECK(text_is(out, 0, "red|big|big,x|big|x"));
    CHECK(text_is(out, 1, "?||"));    /* [NULL, "", ""] || {} */
    CHECK(text_is(out, 2, "?"));      /* array_append(NULL, NULL) is {NULL} */
    CHECK(text_is(out, 3, "a b|a b"));
    hs_col_free(out);
    ex_free(e);
    /* a text[] result is a list<string> column */
    CHECK_OK(ex_parse_scalar("(tags || ARRAY[s])[2:]", &b->schema, &e, &err), &err);
    CHECK(ex_type(e)->type == HS_TYPE_LIST && ex_type(e)->children[0].type == HS_TYPE_STRING);
    CHECK_OK(ex_eval(e, b, &out, &err), &err);
    REQUIRE(out && out->length == 4 && out->children[0]->length == 4);
    CHECK(text_is(out->children[0], 0, "big") && text_is(out->children[0], 1, "big,x"));
    CHECK(text_is(out->children[0], 2, "") && text_is(out->children[0], 3, ""));
    CHECK(HS_COL_OFFSETS(out)[3] == 4 && HS_COL_OFFSETS(out)[4] == 4);   /* rows 2, 3: {} */
    hs_col_free(out);
    ex_free(e);
    /* a filter */
    CHECK_OK(ex_parse_filter("tags @> string_to_array('big', ',') OR '' = ANY(tags)", &b->schema, &e, &err), &err);
    uint8_t sel[4];
    int64_t n = 0;
    CHECK_OK(ex_eval_filter(e, b, NULL, sel, &n, &err), &err);
    CHECK(n == 2 && sel[0] && sel[1] && !sel[2] && !sel[3]);
    ex_free(e);
    /* errors: malformed literal, a cast of a row's text */
    CHECK(ex_parse_scalar("'{a'::text[]", &b->schema, &e, &err) == HS_INVALID);
    CHECK_OK(ex_parse_scalar("cardinality(s::text[])", &b->schema, &e, &err), &err);
    CHECK(ex_eval(e, b, &out, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "malformed array literal") != NULL);
    ex_free(e);
    /* out of memory at every allocation */
    CHECK(expr_oom_loop("array_cat(string_to_array(s, ','), tags) || array_prepend(s, tags)", b, 2000));
    CHECK(expr_oom_loop("array_dims(tags || s)", b, 2000));
    CHECK(expr_oom_loop("array_replace(array_remove(tags || s, 'big'), '', s) || "
                        "array_positions(tags, NULL)::text::text[]", b, 4000));
    hs_batch_free(b);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_text_io);
    HS_RUN(test_order_and_containment);
    HS_RUN(test_builder);
    HS_RUN(test_out_of_memory);
    HS_RUN(test_expressions);
    return hs_test_summary();
}
