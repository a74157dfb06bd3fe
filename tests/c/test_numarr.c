/*
 * tests/c/test_numarr.c - array_append / array_prepend / array_cat / ||
 * over numeric arrays (expr/expr_numarr.c, pv_arr_cat of expr/pgvector.h)
 * and list columns of numbers: the values and element types (bigint[]
 * and numeric[] elements exact), array_cat's NULL rules, the errors, and memory: every
 * allocation freed (leak count), an out-of-memory failure at every
 * allocation of a bind + evaluation leaves nothing behind.  Runs under
 * ASan+UBSan (make build-asan).
 *
 * Oracle: the expected texts are what the PostgreSQL 15 reference server
 * (../shared/oracles/postgres-pgvector.sh) printed for the same expressions
 * over VALUES of the same rows (tests/python/test_sql_numarr_pg.py compares
 * the SQL forms with it).
 */
#include "harness.h"
#include "expr_oom.h"

#include "base/mem.h"
#include "columnar/column.h"
#include "expr/expr.h"

#include <stdio.h>
#include <string.h>

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

/* il list<int32>: [1, 2], [NULL, 5], [], NULL; dl list<double>: [0.5],
 * [NULL], [], [-2.5]; i int32: 7, NULL, -3, 0; bl list<int64>:
 * [3000000000], [NULL], [], [2^53 + 1]. */
static hs_batch *num_batch(hs_error *err)
{
    hs_field schema, ie, il, de, dl, fi, be, bl;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&ie, "item", HS_TYPE_INT32, true);
    hs_field_init_list(&il, "il", true, &ie);
    il.field_id = 1;
    hs_field_init(&de, "item", HS_TYPE_FLOAT64, true);
    hs_field_init_list(&dl, "dl", true, &de);
    dl.field_id = 2;
    hs_field_init(&fi, "i", HS_TYPE_INT32, true);
    fi.field_id = 3;
    hs_field_init(&be, "item", HS_TYPE_INT64, true);
    hs_field_init_list(&bl, "bl", true, &be);
    bl.field_id = 4;
    if (hs_field_add_child(&schema, &il) != HS_OK || hs_field_add_child(&schema, &dl) != HS_OK ||
        hs_field_add_child(&schema, &fi) != HS_OK || hs_field_add_child(&schema, &bl) != HS_OK) {
        hs_field_clear(&schema);
        return NULL;
    }
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, 4, &b, err);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    hs_column *ci = b->cols[0], *cd = b->cols[1], *cv = b->cols[2], *cb = b->cols[3];
    int64_t big = 3000000000LL, past = 9007199254740993LL;
    int32_t one = 1, two = 2, five = 5, seven = 7, m3 = -3, zero = 0;
    double h = 0.5, m25 = -2.5;
    bool ok = hs_col_append_fixed(ci->children[0], &one) == HS_OK &&
              hs_col_append_fixed(ci->children[0], &two) == HS_OK && hs_col_list_end(ci) == HS_OK &&
              hs_col_append_null(ci->children[0]) == HS_OK &&
              hs_col_append_fixed(ci->children[0], &five) == HS_OK && hs_col_list_end(ci) == HS_OK &&
              hs_col_list_end(ci) == HS_OK && hs_col_append_null(ci) == HS_OK &&
              hs_col_append_fixed(cd->children[0], &h) == HS_OK && hs_col_list_end(cd) == HS_OK &&
              hs_col_append_null(cd->children[0]) == HS_OK && hs_col_list_end(cd) == HS_OK &&
              hs_col_list_end(cd) == HS_OK &&
              hs_col_append_fixed(cd->children[0], &m25) == HS_OK && hs_col_list_end(cd) == HS_OK &&
              hs_col_append_fixed(cv, &seven) == HS_OK && hs_col_append_null(cv) == HS_OK &&
              hs_col_append_fixed(cv, &m3) == HS_OK && hs_col_append_fixed(cv, &zero) == HS_OK &&
              hs_col_append_fixed(cb->children[0], &big) == HS_OK && hs_col_list_end(cb) == HS_OK &&
              hs_col_append_null(cb->children[0]) == HS_OK && hs_col_list_end(cb) == HS_OK &&
              hs_col_list_end(cb) == HS_OK &&
              hs_col_append_fixed(cb->children[0], &past) == HS_OK && hs_col_list_end(cb) == HS_OK;
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
    size_t n = hs_col_is_valid(c, i) ? (size_t)(o[i + 1] - o[i]) : 0;
    bool same = hs_col_is_valid(c, i) && n == strlen(want) &&
                (n == 0 || memcmp(c->values.data + o[i], want, n) == 0);
    if (!same)
        fprintf(stderr, "  row %lld: got %.*s, want %s\n", (long long)i, (int)n,
                n ? (const char *)c->values.data + o[i] : "", want);
    return same;
}

/* expr's text per row (NULL: a NULL row) */
static void texts(hs_batch *b, const char *expr, const char *const want[4])
{
    hs_error err = {0};
    ex_expr *e = NULL;
    CHECK_OK(ex_parse_scalar(expr, &b->schema, &e, &err), &err);
    if (!e)
        return;
    hs_column *out = NULL;
    CHECK_OK(ex_eval(e, b, &out, &err), &err);
    if (out) {
        CHECK(out->length == 4);
        for (int64_t i = 0; i < 4 && i < out->length; i++)
            if (!text_is(out, i, want[i]))
                fprintf(stderr, "  in %s\n", expr);
    }
    hs_col_free(out);
    ex_free(e);
}

static void test_values(void)
{
    LEAK_START();
    hs_error err = {0};
    hs_batch *b = num_batch(&err);
    REQUIRE(b);
    static const char *const w1[4] = {"{1,2,7}", "{NULL,5,NULL}", "{-3}", "{0}"};
    texts(b, "(il || i)::text", w1);
    static const char *const w2[4] = {"{7,1,2}", "{NULL,NULL,5}", "{-3}", "{0}"};
    texts(b, "array_prepend(i, il)::text", w2);
    static const char *const w3[4] = {"{1,2,2.5}", "{NULL,5,2.5}", "{2.5}", "{2.5}"};
    texts(b, "array_append(il, 2.5)::text", w3);
    static const char *const w4[4] = {"{1,2,0.5}", "{NULL,5,NULL}", "{}", "{-2.5}"};
    texts(b, "array_cat(il, dl)::text", w4);
    static const char *const w5[4] = {"{1,2}", "{NULL,5}", "{}", NULL};
    texts(b, "(il || NULL)::text", w5);
    static const char *const w6[4] = {"{1,2,1,2}", "{NULL,5,NULL,5}", "{}", NULL};
    texts(b, "array_cat(il, il)::text", w6);
    static const char *const w7[4] = {"{1,2,NULL}", "{NULL,5,NULL}", "{NULL}", "{NULL}"};
    texts(b, "array_append(il, NULL)::text", w7);
    /* numeric[]: array_out prints each element at its own display scale */
    static const char *const w8[4] = {"{1.50,1,2,2.000}", "{1.50,NULL,5,2.000}", "{1.50,2.000}", "{1.50,2.000}"};
    texts(b, "(ARRAY[1.50] || il || 2.000)::text", w8);
    /* element types: integer[] -> list<int32>, with a real -> list<float> */
    ex_expr *e = NULL;
    CHECK_OK(ex_parse_scalar("il || 1", &b->schema, &e, &err), &err);
    CHECK(e && ex_type(e)->type == HS_TYPE_LIST && ex_type(e)->children[0].type == HS_TYPE_INT32);
    ex_free(e);
    CHECK_OK(ex_parse_scalar("il || 1.5::real", &b->schema, &e, &err), &err);
    CHECK(e && ex_type(e)->type == HS_TYPE_LIST && ex_type(e)->children[0].type == HS_TYPE_FLOAT32);
    ex_free(e);
    CHECK_OK(ex_parse_scalar("dl || il", &b->schema, &e, &err), &err);
    CHECK(e && ex_type(e)->type == HS_TYPE_LIST && ex_type(e)->children[0].type == HS_TYPE_FLOAT64);
    hs_column *out = NULL;
    CHECK_OK(ex_eval(e, b, &out, &err), &err);
    REQUIRE(out && out->length == 4);
    CHECK(hs_col_is_valid(out, 3));   /* [-2.5] || NULL is [-2.5] */
    CHECK(HS_COL_OFFSETS(out)[4] - HS_COL_OFFSETS(out)[3] == 1);
    CHECK(((const double *)out->children[0]->values.data)[HS_COL_OFFSETS(out)[3]] == -2.5);
    hs_col_free(out);
    ex_free(e);
    /* bigint[]: integer[] || bigint */
    static const char *const w9[4] = {"{1,2,3000000000}", "{NULL,5,3000000000}", "{3000000000}", "{3000000000}"};
    texts(b, "(il || 3000000000)::text", w9);
    CHECK_OK(ex_parse_scalar("il || 3000000000", &b->schema, &e, &err), &err);
    CHECK(e && ex_type(e)->type == HS_TYPE_LIST && ex_type(e)->children[0].type == HS_TYPE_INT64);
    ex_free(e);
    /* a list<int64> column: bigint[], exact past 2^53 (row 4) */
    static const char *const w10[4] = {"{3000000000,1,2}", "{NULL,NULL,5}", "{}", "{9007199254740993}"};
    texts(b, "(bl || il)::text", w10);
    static const char *const w11[4] = {"{1,2,9007199254740993}", "{NULL,5,9007199254740993}", "{9007199254740993}",
                                       "{9007199254740993}"};
    texts(b, "(il || 9007199254740993)::text", w11);
    static const char *const w12[4] = {"3000000000", NULL, NULL, "9007199254740993"};
    texts(b, "(bl || il)[1]::text", w12);
    static const char *const w13[4] = {"false", NULL, "false", "true"};
    texts(b, "(9007199254740993 = ANY(bl))::text", w13);
    /* errors: a multidimensional array, a text element, a bad element text */
    err = (hs_error){0};
    CHECK(ex_parse_scalar("il || 'x'::text", &b->schema, &e, &err) == HS_NOT_FOUND);
    err = (hs_error){0};
    CHECK_OK(ex_parse_scalar("'{{1},{2}}'::int[] || i", &b->schema, &e, &err), &err);
    CHECK(ex_eval(e, b, &out, &err) == HS_UNSUPPORTED);
    CHECK(strstr(err.msg, "multidimensional arrays are not supported") != NULL);
    ex_free(e);
    err = (hs_error){0};   /* an error keeps its first message */
    CHECK(ex_parse_scalar("il || '{1,x}'", &b->schema, &e, &err) == HS_INVALID);   /* folded */
    CHECK(strstr(err.msg, "invalid input syntax for type integer") != NULL);
    hs_batch_free(b);
    LEAK_END();
}

/* The other operators and functions of numeric array values (subscripts,
 * slices, searches, containment, order, shape); expected texts from
 * PostgreSQL 15 over VALUES of the same rows. */
static void test_value_ops(void)
{
    LEAK_START();
    hs_error err = {0};
    hs_batch *b = num_batch(&err);
    REQUIRE(b);
    static const char *const w1[4] = {"2", "5", NULL, NULL};
    texts(b, "((il || i)[2])::text", w1);
    static const char *const w2[4] = {"{2,7}", "{5,NULL}", "{}", "{}"};
    texts(b, "((il || i)[2:3])::text", w2);
    static const char *const w3[4] = {"3", "1", "1", "1"};
    texts(b, "array_position(il || i, i)::text", w3);
    static const char *const w4[4] = {"{1}", "{}", "{}", NULL};
    texts(b, "array_positions(il, 1)::text", w4);
    static const char *const w5[4] = {"1;2;7", "*;5;*", "-3", "0"};
    texts(b, "array_to_string(il || i, ';', '*')", w5);
    static const char *const w6[4] = {"true", NULL, "false", "false"};
    texts(b, "(2 = ANY(il || 0))::text", w6);
    static const char *const w7[4] = {"true", "false", "false", "false"};
    texts(b, "((il || 0) @> ARRAY[0, 2])::text", w7);
    static const char *const w8[4] = {"false", "true", "false", "false"};
    texts(b, "(il || 0 > ARRAY[1, 3])::text", w8);
    static const char *const w9[4] = {"{1,2}", "{NULL,5}", "{}", "{}"};
    texts(b, "array_remove(il || 0, 0)::text", w9);
    static const char *const w10[4] = {"{1,9}", "{9,5}", "{}", NULL};
    texts(b, "array_replace(il, CASE WHEN il[1] IS NULL THEN NULL ELSE 2 END, 9)::text", w10);
    static const char *const w11[4] = {"[1:2]", "[1:2]", "[1:1]", "[1:2]"};
    texts(b, "array_dims(dl || 1.5)", w11);
    /* numeric[] elements exact past a double's 15 digits */
    static const char *const w12[4] = {"{1.123456789012345678,1,2}", "{1.123456789012345678,NULL,5}",
                                       "{1.123456789012345678}", "{1.123456789012345678}"};
    texts(b, "(ARRAY[1.123456789012345678] || il)::text", w12);
    static const char *const w13[4] = {"2", "2", "2", "2"};
    texts(b, "array_position(ARRAY[0.10000000000000000001, 0.1] || il, 0.1)::text", w13);
    /* multidimensional: text in/out, a[i][j], the shape */
    static const char *const w14[4] = {"3", "3", NULL, NULL};
    texts(b, "('{{1,2},{3,4}}'::int[])[cardinality(il)][1]::text", w14);
    static const char *const w15[4] = {"[1:2][1:2]", "[1:2][1:2]", "[1:2][1:2]", "[1:2][1:2]"};
    texts(b, "array_dims(('{{1,2},{3,4}}'::int[])::bigint[])", w15);
    static const char *const w16[4] = {"{{1,2},{3,7}}", NULL, "{{1,2},{3,-3}}", "{{1,2},{3,0}}"};
    texts(b, "(('{{1,2},{3,' || i || '}}')::int[])::text", w16);
    ex_expr *e = NULL;
    hs_column *out = NULL;
    CHECK_OK(ex_parse_scalar("('{99999999999999999999.5}'::numeric[] || i)::int8[]", &b->schema, &e, &err), &err);
    CHECK(ex_eval(e, b, &out, &err) == HS_INVALID && strstr(err.msg, "bigint out of range"));
    ex_free(e);
    hs_batch_free(b);
    LEAK_END();
}

static void test_out_of_memory(void)
{
    LEAK_START();
    hs_error err = {0};
    hs_batch *b = num_batch(&err);
    REQUIRE(b);
    CHECK(expr_oom_loop("array_cat(il, dl) || array_prepend(i, il) || 2.5", b, 2000));
    CHECK(expr_oom_loop("(('{{1,2},{3,' || i || '}}')::int[])[2][2]::text || array_dims(('{{' || i || '}}')::int[])",
                        b, 2000));
    CHECK(expr_oom_loop("array_to_string(array_replace((il || i)[1:3], 2, 9), ',') || "
                        "array_positions(il || 0, 0)::text || (2 = ANY(dl || 2.5))::text", b, 4000));
    hs_batch_free(b);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_values);
    HS_RUN(test_value_ops);
    HS_RUN(test_out_of_memory);
    return hs_test_summary();
}
