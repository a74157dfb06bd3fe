/*
 * tests/c/test_zorder.c - columnar/zorder.c: z-order permutations.
 *
 * Expected orders are written out by hand from the definition (zorder.h),
 * not computed by the code under test: one column = its sorted order (NULLs
 * first, NaN last, -0.0 equal to 0.0, ties in row order); a 4 x 4 grid of
 * two columns = the Morton curve (x's bit before y's at each level); strings
 * by their first 8 bytes; unsupported types and bad column lists refused;
 * hs_batch_take copies rows.  tests/python/test_table_zorder.py checks the
 * order against a numpy implementation through compaction.
 */
#include "harness.h"

#include "base/mem.h"
#include "columnar/zorder.h"

#include <math.h>

static hs_batch *batch2(hs_type a, hs_type b)
{
    hs_field s, f;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "a", a, true);
    if (hs_field_add_child(&s, &f) != HS_OK)
        abort();
    hs_field_init(&f, "b", b, true);
    if (hs_field_add_child(&s, &f) != HS_OK)
        abort();
    hs_batch *out = NULL;
    hs_error err = {0};
    if (hs_batch_create(&s, 0, &out, &err) != HS_OK)
        abort();
    hs_field_clear(&s);
    return out;
}

static void check_perm(const hs_batch *b, const int *cols, int n, const int64_t *want)
{
    int64_t *perm = NULL;
    hs_error err = {0};
    CHECK(hs_zorder_permutation(b, cols, n, &perm, &err) == HS_OK);
    for (int64_t i = 0; perm && i < b->n_rows; i++) {
        if (perm[i] != want[i])
            fprintf(stderr, "  position %lld: row %lld, want %lld\n", (long long)i,
                    (long long)perm[i], (long long)want[i]);
        CHECK(perm[i] == want[i]);
    }
    hs_free(perm);
}

static void test_one_column_is_sorted_order(void)
{
    hs_batch *b = batch2(HS_TYPE_INT64, HS_TYPE_FLOAT64);
    /* a: 5, NULL, -3, 5, INT64_MIN, 0 ; b: 1.5, -0.0, NaN, 0.0, NULL, -inf */
    int64_t a[] = {5, 0, -3, 5, INT64_MIN, 0};
    double d[] = {1.5, -0.0, NAN, 0.0, 0, -INFINITY};
    for (int i = 0; i < 6; i++) {
        CHECK((i == 1 ? hs_col_append_null(b->cols[0]) : hs_col_append_fixed(b->cols[0], &a[i])) == HS_OK);
        CHECK((i == 4 ? hs_col_append_null(b->cols[1]) : hs_col_append_fixed(b->cols[1], &d[i])) == HS_OK);
    }
    b->n_rows = 6;
    int ca = 0, cb = 1;
    int64_t want_a[] = {1, 4, 2, 5, 0, 3};        /* NULL, MIN, -3, 0, 5, 5 (row order) */
    check_perm(b, &ca, 1, want_a);
    int64_t want_b[] = {4, 5, 1, 3, 0, 2};        /* NULL, -inf, -0.0 = 0.0, 1.5, NaN */
    check_perm(b, &cb, 1, want_b);
    hs_batch_free(b);
}

static void test_grid_is_morton_curve(void)
{
    /* rows (x, y) on a 4 x 4 grid, inserted in a scrambled order; the
     * Morton curve with x's bit first at each level visits
     * (0,0) (0,1) (1,0) (1,1) (0,2) (0,3) (1,2) (1,3) (2,0) ... */
    hs_batch *b = batch2(HS_TYPE_INT32, HS_TYPE_INT32);
    int32_t xs[16], ys[16];
    for (int i = 0; i < 16; i++) {
        int k = (i * 7 + 3) % 16;      /* a permutation of 0..15 */
        xs[i] = k / 4 * 10 - 15;       /* distinct values, scaled and shifted: ranks matter */
        ys[i] = k % 4 * 1000;
        CHECK(hs_col_append_fixed(b->cols[0], &xs[i]) == HS_OK);
        CHECK(hs_col_append_fixed(b->cols[1], &ys[i]) == HS_OK);
    }
    b->n_rows = 16;
    static const int curve[16][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3},
                                     {2, 0}, {2, 1}, {3, 0}, {3, 1}, {2, 2}, {2, 3}, {3, 2}, {3, 3}};
    int64_t want[16];
    for (int c = 0; c < 16; c++)
        for (int i = 0; i < 16; i++)
            if (xs[i] == curve[c][0] * 10 - 15 && ys[i] == curve[c][1] * 1000)
                want[c] = i;
    int cols[2] = {0, 1};
    check_perm(b, cols, 2, want);
    hs_batch_free(b);
}

static void test_strings_and_take(void)
{
    hs_batch *b = batch2(HS_TYPE_STRING, HS_TYPE_INT64);
    const char *s[] = {"pear", "apple", "", "apples and pears", "zz", "apple"};
    for (int i = 0; i < 6; i++) {
        int64_t v = i;
        CHECK(hs_col_append_bytes(b->cols[0], s[i], strlen(s[i])) == HS_OK);
        CHECK(hs_col_append_fixed(b->cols[1], &v) == HS_OK);
    }
    b->n_rows = 6;
    int c0 = 0;
    int64_t want[] = {2, 1, 5, 3, 0, 4};   /* "", apple, apple, apples.., pear, zz */
    check_perm(b, &c0, 1, want);
    hs_batch *t = NULL;
    hs_error err = {0};
    CHECK(hs_batch_take(b, want, 3, &t, &err) == HS_OK);
    CHECK(t && t->n_rows == 3 && t->cols[1]->length == 3);
    if (t && t->n_rows == 3) {
        const int64_t *v = (const int64_t *)t->cols[1]->values.data;
        CHECK(v[0] == 2 && v[1] == 1 && v[2] == 5);
    }
    hs_batch_free(t);
    hs_batch_free(b);
}

static void test_refusals(void)
{
    hs_field s, f, e;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "v", HS_TYPE_LIST, true);
    hs_field_init(&e, "element", HS_TYPE_FLOAT32, true);
    CHECK(hs_field_add_child(&f, &e) == HS_OK);
    CHECK(hs_field_add_child(&s, &f) == HS_OK);
    hs_batch *b = NULL;
    hs_error err = {0};
    CHECK(hs_batch_create(&s, 0, &b, &err) == HS_OK);
    hs_field_clear(&s);
    int64_t *perm = NULL;
    int c = 0, bad = 3;
    CHECK(hs_zorder_permutation(b, &c, 1, &perm, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "has no order") != NULL);
    CHECK(hs_zorder_permutation(b, &bad, 1, &perm, &err) == HS_INVALID);
    CHECK(hs_zorder_permutation(b, &c, 0, &perm, &err) == HS_INVALID);
    CHECK(perm == NULL);
    hs_batch_free(b);
}

int main(void)
{
    HS_RUN(test_one_column_is_sorted_order);
    HS_RUN(test_grid_is_morton_curve);
    HS_RUN(test_strings_and_take);
    HS_RUN(test_refusals);
    return hs_test_summary();
}
