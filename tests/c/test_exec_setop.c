/*
 * tests/c/test_exec_setop.c - UNION / INTERSECT / EXCEPT with and without
 * ALL over rows with many duplicates and NULLs.
 *
 * Oracle: multiplicities counted by brute force in this file from the SQL
 * standard's definitions (UNION ALL: m + n copies; INTERSECT ALL: min(m, n);
 * EXCEPT ALL: max(m - n, 0); UNION and INTERSECT: one copy when that count
 * is positive; EXCEPT: one copy when m > 0 and n = 0; NULLs compare equal), results compared as multisets.
 */
#include "exec_testutil.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

static void schema2(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    xt_add_field(s, "a", HS_TYPE_INT64);
    xt_add_field(s, "s", HS_TYPE_STRING);
}

static xt_val *random_rows(int64_t n)
{
    xt_val *rows = hs_calloc((size_t)(n * 2 + 1), sizeof *rows);
    for (int64_t r = 0; r < n; r++) {
        rows[r * 2].null = xt_rnd() % 6 == 0;
        rows[r * 2].i = (int64_t)(xt_rnd() % 4);
        rows[r * 2 + 1].null = xt_rnd() % 6 == 0;
        snprintf(rows[r * 2 + 1].s, sizeof rows[r * 2 + 1].s, "%c", 'x' + (int)(xt_rnd() % 2));
    }
    return rows;
}

static int64_t count_of(const xt_val *rows, int64_t n, const xt_val *row)
{
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++)
        c += xt_val_cmp(&rows[i * 2], &row[0]) == 0 && xt_val_cmp(&rows[i * 2 + 1], &row[1]) == 0;
    return c;
}

static void run_case(xo_setop_kind kind, bool all, int64_t nl, int64_t nr)
{
    hs_field s;
    schema2(&s);
    xo_ctx ctx = {0};
    xt_val *l = random_rows(nl), *r = random_rows(nr);
    xo_op *lo = xt_values(&ctx, &s, l, nl, 1 + (int64_t)(xt_rnd() % 50));
    xo_op *ro = xt_values(&ctx, &s, r, nr, 1 + (int64_t)(xt_rnd() % 50)), *op;
    hs_error err = {0};
    CHECK_OK(xo_setop(kind, all, lo, ro, &op, &err), &err);
    xt_val *got;
    int64_t n_got;
    CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
    /* distinct candidate rows: all of l and r */
    xt_val *want = hs_calloc((size_t)((nl + nr) * 2 + 2), sizeof *want);
    xt_val *cand = hs_calloc((size_t)((nl + nr) * 2 + 2), sizeof *cand);
    memcpy(cand, l, (size_t)nl * 2 * sizeof *l);
    memcpy(cand + nl * 2, r, (size_t)nr * 2 * sizeof *r);
    int64_t nw = 0;
    for (int64_t i = 0; i < nl + nr; i++) {
        const xt_val *row = cand + i * 2;
        if (count_of(cand, i, row) > 0)
            continue;   /* first occurrence only */
        int64_t m = count_of(l, nl, row), n = count_of(r, nr, row), copies;
        switch (kind) {
        case XO_SET_UNION: copies = m + n; break;
        case XO_SET_INTERSECT: copies = m < n ? m : n; break;
        default: copies = all ? (m > n ? m - n : 0) : (m > 0 && n == 0); break;
        }
        if (!all && copies > 0)
            copies = 1;
        for (int64_t k = 0; k < copies; k++)
            memcpy(want + (nw++) * 2, row, 2 * sizeof *row);
    }
    CHECK(n_got == nw);
    xt_sort_rows(got, n_got, 2);
    xt_sort_rows(want, nw, 2);
    bool same = n_got == nw && xt_rows_equal(got, want, nw, 2);
    CHECK(same);
    if (!same) {
        fprintf(stderr, "kind %d all %d\n", (int)kind, all);
        xt_print_rows("got", got, n_got, 2);
        xt_print_rows("want", want, nw, 2);
    }
    xo_free(op);
    hs_free(got);
    hs_free(want);
    hs_free(cand);
    hs_free(l);
    hs_free(r);
    hs_field_clear(&s);
}

static void test_setops(void)
{
    LEAK_START();
    const int64_t sizes[] = {0, 1, 5, 40, 300};
    for (int kind = XO_SET_UNION; kind <= XO_SET_EXCEPT; kind++)
        for (int all = 0; all < 2; all++)
            for (int t = 0; t < 8; t++)
                run_case((xo_setop_kind)kind, all, sizes[xt_rnd() % 5], sizes[xt_rnd() % 5]);
    LEAK_END();
}

static void test_setop_mismatch(void)
{
    LEAK_START();
    hs_field s, s1;
    schema2(&s);
    hs_field_init(&s1, "", HS_TYPE_STRUCT, false);
    xt_add_field(&s1, "a", HS_TYPE_INT64);
    xt_add_field(&s1, "d", HS_TYPE_FLOAT64);
    xo_ctx ctx = {0};
    xo_op *l = xt_values(&ctx, &s, NULL, 0, 1), *r = xt_values(&ctx, &s1, NULL, 0, 1), *op;
    hs_error err = {0};
    CHECK(xo_setop(XO_SET_UNION, true, l, r, &op, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "column 2") != NULL);
    hs_field_clear(&s);
    hs_field_clear(&s1);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_setops);
    HS_RUN(test_setop_mismatch);
    return hs_test_summary();
}
