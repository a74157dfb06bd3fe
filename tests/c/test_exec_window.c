/*
 * tests/c/test_exec_window.c - Window: row_number, rank, dense_rank,
 * count(*), count, sum (default, ROWS and whole-partition frames), avg,
 * min, max, lag, lead, first_value, last_value over PARTITION BY / ORDER BY
 * with NULLs in partitions, order keys and arguments, and ties.
 *
 * Oracle: brute force in this file from PostgreSQL's definitions: the
 * rows stably sorted by (partition ASC NULLS LAST, order key), and for
 * every row its frame scanned directly (default frame with ORDER BY =
 * partition start .. last peer; ROWS = .. current row; whole partition),
 * rank = 1 + rows before the first peer, dense_rank = peer groups so far.
 */
#include "exec_testutil.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

/* p int64, o int64, x int32, s string */
#define NC 4
static void schema4(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    xt_add_field(s, "p", HS_TYPE_INT64);
    xt_add_field(s, "o", HS_TYPE_INT64);
    xt_add_field(s, "x", HS_TYPE_INT32);
    xt_add_field(s, "s", HS_TYPE_STRING);
}

static xo_sort_key o_key;
static xt_val *o_rows;

static int cmp_null_last(const xt_val *a, const xt_val *b, bool desc, bool nulls_first)
{
    if (a->null != b->null)
        return (a->null == nulls_first) ? -1 : 1;
    if (a->null)
        return 0;
    int r = a->i < b->i ? -1 : a->i > b->i;
    return desc ? -r : r;
}

static int perm_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    const xt_val *ra = o_rows + a * NC, *rb = o_rows + b * NC;
    int r = cmp_null_last(&ra[0], &rb[0], false, false);
    if (!r)
        r = cmp_null_last(&ra[1], &rb[1], o_key.desc, o_key.nulls_first);
    if (!r)
        r = a < b ? -1 : a > b;
    return r;
}

static void test_window_random(void)
{
    LEAK_START();
    hs_field s;
    schema4(&s);
    const xo_win fns[] = {
        {XO_WIN_ROW_NUMBER}, {XO_WIN_RANK}, {XO_WIN_DENSE_RANK}, {XO_WIN_COUNT_STAR},
        {XO_WIN_COUNT, 2}, {XO_WIN_SUM, 2}, {XO_WIN_SUM, 2, 0, XO_FRAME_ROWS},
        {XO_WIN_SUM, 2, 0, XO_FRAME_WHOLE}, {XO_WIN_AVG, 2}, {XO_WIN_MIN, 3}, {XO_WIN_MAX, 2},
        {XO_WIN_LAG, 2, 2}, {XO_WIN_LEAD, 2}, {XO_WIN_FIRST_VALUE, 3}, {XO_WIN_LAST_VALUE, 2},
    };
    const int nf = (int)(sizeof fns / sizeof fns[0]);
    for (int t = 0; t < 30; t++) {
        int64_t n = t < 3 ? t : (int64_t)(xt_rnd() % 300);
        xt_val *rows = hs_calloc((size_t)(n * NC + 1), sizeof *rows);
        for (int64_t r = 0; r < n; r++) {
            xt_val *v = rows + r * NC;
            for (int c = 0; c < NC; c++)
                v[c].null = xt_rnd() % 8 == 0;
            v[0].i = (int64_t)(xt_rnd() % 4);
            v[1].i = (int64_t)(xt_rnd() % 10);
            v[2].i = (int64_t)(xt_rnd() % 100) - 50;
            snprintf(v[3].s, sizeof v[3].s, "w%d", (int)(xt_rnd() % 20));
        }
        bool with_order = t % 5 != 4;
        o_key = (xo_sort_key){1, xt_rnd() % 2, false};
        o_key.nulls_first = xt_rnd() % 2;
        xo_ctx ctx = {0};
        xo_op *v = xt_values(&ctx, &s, rows, n, 1 + (int64_t)(xt_rnd() % 100)), *op;
        int part = 0;
        hs_error err = {0};
        CHECK_OK(xo_window(v, 1, &part, with_order ? 1 : 0, &o_key, nf, fns, &op, &err), &err);
        int nc = NC + nf;
        REQUIRE(op->schema.n_children == nc);
        xt_val *got;
        int64_t n_got;
        CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
        /* brute force */
        int64_t *perm = hs_malloc((size_t)(n + 1) * sizeof *perm);
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        o_rows = rows;
        if (!with_order)
            o_key = (xo_sort_key){1, false, false};
        xt_val *want = hs_calloc((size_t)(n * nc + 1), sizeof *want);
        /* without ORDER BY the rows of a partition keep input order: sort on p only */
        if (with_order) {
            qsort(perm, (size_t)n, sizeof *perm, perm_cmp);
        } else {
            for (int64_t i = 1; i < n; i++)   /* stable insertion sort on p */
                for (int64_t j = i; j > 0 && cmp_null_last(&rows[perm[j - 1] * NC], &rows[perm[j] * NC], false, false) > 0; j--) {
                    int64_t tmp = perm[j];
                    perm[j] = perm[j - 1];
                    perm[j - 1] = tmp;
                }
        }
        for (int64_t q = 0; q < n; q++) {
            const xt_val *row = rows + perm[q] * NC;
            xt_val *w = want + q * nc;
            memcpy(w, row, NC * sizeof *w);
            int64_t ps = q, pe = q;
            while (ps > 0 && xt_val_cmp(&rows[perm[ps - 1] * NC], &row[0]) == 0)
                ps--;
            while (pe + 1 < n && xt_val_cmp(&rows[perm[pe + 1] * NC], &row[0]) == 0)
                pe++;
            int64_t peer_s = q, peer_e = q;
            if (with_order) {
                while (peer_s > ps && xt_val_cmp(&rows[perm[peer_s - 1] * NC + 1], &row[1]) == 0)
                    peer_s--;
                while (peer_e < pe && xt_val_cmp(&rows[perm[peer_e + 1] * NC + 1], &row[1]) == 0)
                    peer_e++;
            } else {
                peer_s = ps;
                peer_e = pe;
            }
            int64_t dense = 0;
            for (int64_t k = ps; k <= peer_s; k++)
                dense += k == ps || (with_order && xt_val_cmp(&rows[perm[k - 1] * NC + 1], &rows[perm[k] * NC + 1]) != 0);
            for (int f = 0; f < nf; f++) {
                xt_val *o = &w[NC + f];
                int64_t fe = fns[f].frame == XO_FRAME_ROWS ? q : fns[f].frame == XO_FRAME_WHOLE ? pe : peer_e;
                int64_t cnt = 0, cstar = 0, sum = 0;
                xt_val best = {.null = true};
                for (int64_t k = ps; k <= fe; k++) {
                    const xt_val *a = &rows[perm[k] * NC + fns[f].arg];
                    cstar++;
                    if (a->null)
                        continue;
                    cnt++;
                    sum += a->i;
                    if (best.null || (fns[f].fn == XO_WIN_MIN ? xt_val_cmp(a, &best) < 0 : xt_val_cmp(a, &best) > 0))
                        best = *a;
                }
                switch (fns[f].fn) {
                case XO_WIN_ROW_NUMBER: o->i = q - ps + 1; break;
                case XO_WIN_RANK: o->i = peer_s - ps + 1; break;
                case XO_WIN_DENSE_RANK: o->i = dense; break;
                case XO_WIN_COUNT_STAR: o->i = cstar; break;
                case XO_WIN_COUNT: o->i = cnt; break;
                case XO_WIN_SUM: o->null = cnt == 0; o->i = sum; break;
                case XO_WIN_AVG: o->null = cnt == 0; o->d = cnt ? (double)sum / (double)cnt : 0; break;
                case XO_WIN_MIN: case XO_WIN_MAX: *o = best; break;
                case XO_WIN_LAG: {
                    int64_t k = q - fns[f].offset;
                    if (k >= ps) *o = rows[perm[k] * NC + 2]; else o->null = true;
                    break;
                }
                case XO_WIN_LEAD: {
                    int64_t k = q + 1;
                    if (k <= pe) *o = rows[perm[k] * NC + 2]; else o->null = true;
                    break;
                }
                case XO_WIN_FIRST_VALUE: *o = rows[perm[ps] * NC + 3]; break;
                case XO_WIN_LAST_VALUE: *o = rows[perm[fe] * NC + 2]; break;
                default: break;
                }
            }
        }
        CHECK(n_got == n);
        bool same = n_got == n && xt_rows_equal(got, want, n, nc);
        CHECK(same);
        if (!same) {
            fprintf(stderr, "case %d order %d desc %d nf %d\n", t, with_order, o_key.desc, o_key.nulls_first);
            xt_print_rows("got", got, n_got, nc);
            xt_print_rows("want", want, n, nc);
        }
        xo_free(op);
        hs_free(got);
        hs_free(want);
        hs_free(perm);
        hs_free(rows);
    }
    hs_field_clear(&s);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_window_random);
    return hs_test_summary();
}
