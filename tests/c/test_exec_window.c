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
 * ROWS BETWEEN lo AND hi = current row + lo .. + hi clipped to the partition,
 * rank = 1 + rows before the first peer, dense_rank = peer groups so far.
 * GROUPS / RANGE offset frames and EXCLUDE: see test_window_frames_random.
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
        /* ROWS BETWEEN lo AND hi */
        {XO_WIN_SUM, 2, 0, XO_FRAME_ROWS_BETWEEN, NULL, -2, 1},
        {XO_WIN_COUNT, 2, 0, XO_FRAME_ROWS_BETWEEN, NULL, -1, -1},
        {XO_WIN_MIN, 3, 0, XO_FRAME_ROWS_BETWEEN, NULL, 0, INT64_MAX},
        {XO_WIN_MAX, 2, 0, XO_FRAME_ROWS_BETWEEN, NULL, -3, 0},
        {XO_WIN_MIN, 2, 0, XO_FRAME_ROWS_BETWEEN, NULL, -1, 2},
        {XO_WIN_AVG, 2, 0, XO_FRAME_ROWS_BETWEEN, NULL, INT64_MIN, 2},
        {XO_WIN_FIRST_VALUE, 3, 0, XO_FRAME_ROWS_BETWEEN, NULL, 1, 3},
        {XO_WIN_LAST_VALUE, 2, 0, XO_FRAME_ROWS_BETWEEN, NULL, -2, -1},
        {XO_WIN_COUNT_STAR, 0, 0, XO_FRAME_ROWS_BETWEEN, NULL, -1, 1},
        {XO_WIN_SUM, 2, 0, XO_FRAME_ROWS_BETWEEN, NULL, 2, INT64_MAX},
        /* ntile, percent_rank, cume_dist, nth_value, lag/lead with a default */
        {XO_WIN_NTILE, 0, 3}, {XO_WIN_NTILE, 0, 1}, {XO_WIN_NTILE, 0, 50},
        {XO_WIN_PERCENT_RANK}, {XO_WIN_CUME_DIST},
        {XO_WIN_NTH_VALUE, 2, 2},
        {XO_WIN_NTH_VALUE, 3, 2, XO_FRAME_ROWS_BETWEEN, NULL, -1, 1},
        {XO_WIN_LAG, 3, 1, .has_default = true, .def_col = 3},
        {XO_WIN_LEAD, 2, 2, .has_default = true, .def_col = 2},
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
                int64_t fs = ps;
                if (fns[f].frame == XO_FRAME_ROWS_BETWEEN) {
                    fs = fns[f].lo == INT64_MIN ? ps : q + fns[f].lo;
                    fe = fns[f].hi == INT64_MAX ? pe : q + fns[f].hi;
                    fs = fs < ps ? ps : fs;
                    fe = fe > pe ? pe : fe;
                }
                int64_t cnt = 0, cstar = 0, sum = 0;
                xt_val best = {.null = true};
                for (int64_t k = fs; k <= fe; k++) {
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
                case XO_WIN_LAG: case XO_WIN_LEAD: {
                    int64_t off = fns[f].offset > 0 ? fns[f].offset : 1;
                    int64_t k = fns[f].fn == XO_WIN_LAG ? q - off : q + off;
                    if (k >= ps && k <= pe) *o = rows[perm[k] * NC + fns[f].arg];
                    else if (fns[f].has_default) *o = row[fns[f].def_col];
                    else o->null = true;
                    break;
                }
                case XO_WIN_FIRST_VALUE:
                    if (fs <= fe) *o = rows[perm[fs] * NC + 3]; else o->null = true;
                    break;
                case XO_WIN_NTILE: {
                    int64_t nrows = pe - ps + 1, nb = fns[f].offset, qq = q - ps;
                    /* PostgreSQL: the first nrows % nb buckets get one row more */
                    int64_t size = nrows / nb, rem = nrows % nb, bucket = 0, start = 0;
                    for (int64_t b = 0; b < nb; b++) {
                        int64_t len = size + (b < rem);
                        if (qq >= start && qq < start + len)
                            bucket = b + 1;
                        start += len;
                    }
                    o->i = bucket;
                    break;
                }
                case XO_WIN_PERCENT_RANK: {
                    int64_t nrows = pe - ps + 1, rk = peer_s - ps + 1;
                    o->d = nrows > 1 ? (double)(rk - 1) / (double)(nrows - 1) : 0;
                    break;
                }
                case XO_WIN_CUME_DIST:
                    o->d = (double)(peer_e - ps + 1) / (double)(pe - ps + 1);
                    break;
                case XO_WIN_NTH_VALUE: {
                    int64_t k = fs + fns[f].offset - 1;
                    if (fs <= fe && k <= fe) *o = rows[perm[k] * NC + fns[f].arg]; else o->null = true;
                    break;
                }
                case XO_WIN_LAST_VALUE:
                    if (fs <= fe) *o = rows[perm[fe] * NC + 2]; else o->null = true;
                    break;
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

/* ---- GROUPS and RANGE offset frames, EXCLUDE ----
 * Oracle: frame membership from PostgreSQL's definitions row by row (not
 * the operator's segments): a row k is in q's frame when it is not before
 * the frame start and not after its end, where for RANGE offsets "not
 * before" means key(k) >= key(q) - L (ASC; <= key(q) + L DESC), a NULL k
 * counting as after every value under NULLS LAST, and a NULL q framing
 * exactly its NULL peers; GROUPS compares peer group numbers; then the
 * exclusion drops q, its peers, or its peers but q. */

/* p int64, o int64, x int32, s string, olo int64, ohi int64 */
#define NF 6
static void schema6(hs_field *s)
{
    schema4(s);
    xt_add_field(s, "olo", HS_TYPE_INT64);
    xt_add_field(s, "ohi", HS_TYPE_INT64);
}

static int f_key_cmp(const xt_val *a, const xt_val *b, bool desc)
{
    int r = a->i < b->i ? -1 : a->i > b->i;
    return desc ? -r : r;
}

static int perm6_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    const xt_val *ra = o_rows + a * NF, *rb = o_rows + b * NF;
    int r = cmp_null_last(&ra[0], &rb[0], false, false);
    if (!r)
        r = cmp_null_last(&ra[1], &rb[1], o_key.desc, o_key.nulls_first);
    if (!r)
        r = a < b ? -1 : a > b;
    return r;
}

static void test_window_frames_random(void)
{
    LEAK_START();
    hs_field s;
    schema6(&s);
    for (int t = 0; t < 40; t++) {
        int64_t n = t < 3 ? t : (int64_t)(xt_rnd() % 250);
        int64_t L = (int64_t)(xt_rnd() % 4), H = (int64_t)(xt_rnd() % 4);
        o_key = (xo_sort_key){1, xt_rnd() % 2, xt_rnd() % 2};
        bool desc = o_key.desc;
        xt_val *rows = hs_calloc((size_t)(n * NF + 1), sizeof *rows);
        for (int64_t r = 0; r < n; r++) {
            xt_val *v = rows + r * NF;
            for (int c = 0; c < 4; c++)
                v[c].null = xt_rnd() % 8 == 0;
            v[0].i = (int64_t)(xt_rnd() % 3);
            v[1].i = (int64_t)(xt_rnd() % 12);
            v[2].i = (int64_t)(xt_rnd() % 100) - 50;
            snprintf(v[3].s, sizeof v[3].s, "w%d", (int)(xt_rnd() % 20));
            /* the bounds as the planner computes them: "preceding" is
             * toward the start of the order */
            v[4] = v[1];
            v[5] = v[1];
            v[4].i = desc ? v[1].i + L : v[1].i - L;
            v[5].i = desc ? v[1].i - H : v[1].i + H;
        }
        const xo_exclude ex[] = {XO_EXCL_NONE, XO_EXCL_CURRENT, XO_EXCL_GROUP, XO_EXCL_TIES};
        const xo_win_fn fnk[] = {XO_WIN_COUNT_STAR, XO_WIN_COUNT, XO_WIN_SUM, XO_WIN_MIN,
                                 XO_WIN_MAX, XO_WIN_FIRST_VALUE, XO_WIN_LAST_VALUE,
                                 XO_WIN_NTH_VALUE};
        enum { NFN = 16 };
        xo_win fns[NFN];
        int64_t range_lo[NFN], range_hi[NFN];   /* RANGE: 1 offset, INT64_MIN/MAX, 0 */
        for (int f = 0; f < NFN; f++) {
            xo_win *w = &fns[f];
            memset(w, 0, sizeof *w);
            w->fn = fnk[xt_rnd() % 8];
            w->arg = w->fn == XO_WIN_MIN || w->fn == XO_WIN_MAX ? (int)(xt_rnd() % 2) + 2 : 2;
            w->offset = 2;
            w->exclude = ex[xt_rnd() % 4];
            w->range_key = w->range_lo = w->range_hi = w->range_off_lo = w->range_off_hi = -1;
            if (f % 2) {
                w->frame = XO_FRAME_GROUPS;
                int64_t a = (int64_t)(xt_rnd() % 7) - 3, b = a + (int64_t)(xt_rnd() % 5) - 1;
                w->lo = xt_rnd() % 6 == 0 ? INT64_MIN : a;
                w->hi = xt_rnd() % 6 == 0 ? INT64_MAX : b;
            } else {
                w->frame = XO_FRAME_RANGE;
                w->range_desc = desc;
                w->range_key = 1;
                static const int64_t kinds[] = {1, 1, 1, 0, INT64_MIN};
                w->lo = kinds[xt_rnd() % 5];
                w->hi = kinds[xt_rnd() % 4] == INT64_MIN ? INT64_MAX : kinds[xt_rnd() % 4];
                if (w->lo == 1)
                    w->range_lo = 4;
                if (w->hi == 1)
                    w->range_hi = 5;
            }
            range_lo[f] = w->lo;
            range_hi[f] = w->hi;
        }
        xo_ctx ctx = {0};
        xo_op *v = xt_values(&ctx, &s, rows, n, 1 + (int64_t)(xt_rnd() % 100)), *op;
        int part = 0;
        hs_error err = {0};
        CHECK_OK(xo_window(v, 1, &part, 1, &o_key, NFN, fns, &op, &err), &err);
        int nc = NF + NFN;
        xt_val *got;
        int64_t n_got;
        CHECK_OK(xt_run(op, &got, &n_got, &err), &err);
        int64_t *perm = hs_malloc((size_t)(n + 1) * sizeof *perm), *grp = hs_malloc((size_t)(n + 1) * sizeof *grp);
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        o_rows = rows;
        qsort(perm, (size_t)n, sizeof *perm, perm6_cmp);
        xt_val *want = hs_calloc((size_t)(n * nc + 1), sizeof *want);
        for (int64_t q = 0; q < n; q++) {
            const xt_val *row = rows + perm[q] * NF;
            grp[q] = q == 0 || xt_val_cmp(&rows[perm[q - 1] * NF], &row[0]) != 0 ? 0
                   : grp[q - 1] + (xt_val_cmp(&rows[perm[q - 1] * NF + 1], &row[1]) != 0);
        }
        for (int64_t q = 0; q < n; q++) {
            const xt_val *row = rows + perm[q] * NF;
            xt_val *w = want + q * nc;
            memcpy(w, row, NF * sizeof *w);
            for (int f = 0; f < NFN; f++) {
                xt_val *o = &w[NF + f];
                int64_t cnt = 0, cstar = 0, sum = 0, first = -1, last = -1, nth = -1;
                xt_val best = {.null = true};
                for (int64_t k = 0; k < n; k++) {
                    const xt_val *rk = rows + perm[k] * NF;
                    if (xt_val_cmp(&rk[0], &row[0]) != 0)
                        continue;   /* another partition */
                    bool peer = grp[k] == grp[q], in;
                    if (fns[f].frame == XO_FRAME_GROUPS) {
                        int64_t d = grp[k] - grp[q];
                        in = (range_lo[f] == INT64_MIN || d >= range_lo[f]) &&
                             (range_hi[f] == INT64_MAX || d <= range_hi[f]);
                    } else {
                        bool s_ok, e_ok;
                        if (range_lo[f] == INT64_MIN)
                            s_ok = true;
                        else if (range_lo[f] == 0 || row[1].null)
                            s_ok = peer || k > q;
                        else
                            s_ok = rk[1].null ? !o_key.nulls_first
                                              : f_key_cmp(&rk[1], &row[4], desc) >= 0;
                        if (range_hi[f] == INT64_MAX)
                            e_ok = true;
                        else if (range_hi[f] == 0 || row[1].null)
                            e_ok = peer || k < q;
                        else
                            e_ok = rk[1].null ? o_key.nulls_first
                                              : f_key_cmp(&rk[1], &row[5], desc) <= 0;
                        in = s_ok && e_ok;
                    }
                    if (fns[f].exclude == XO_EXCL_CURRENT && k == q)
                        in = false;
                    if (fns[f].exclude == XO_EXCL_GROUP && peer)
                        in = false;
                    if (fns[f].exclude == XO_EXCL_TIES && peer && k != q)
                        in = false;
                    if (!in)
                        continue;
                    if (first < 0)
                        first = k;
                    last = k;
                    if (++cstar == fns[f].offset)
                        nth = k;
                    const xt_val *a = &rk[fns[f].arg];
                    if (a->null)
                        continue;
                    cnt++;
                    sum += a->i;
                    if (best.null || (fns[f].fn == XO_WIN_MIN ? xt_val_cmp(a, &best) < 0 : xt_val_cmp(a, &best) > 0))
                        best = *a;
                }
                int64_t pickk = fns[f].fn == XO_WIN_FIRST_VALUE ? first
                              : fns[f].fn == XO_WIN_LAST_VALUE ? last : nth;
                switch (fns[f].fn) {
                case XO_WIN_COUNT_STAR: o->i = cstar; break;
                case XO_WIN_COUNT: o->i = cnt; break;
                case XO_WIN_SUM: o->null = cnt == 0; o->i = sum; break;
                case XO_WIN_MIN: case XO_WIN_MAX: *o = best; break;
                default:
                    if (pickk >= 0) *o = rows[perm[pickk] * NF + fns[f].arg]; else o->null = true;
                    break;
                }
            }
        }
        CHECK(n_got == n);
        bool same = n_got == n && xt_rows_equal(got, want, n, nc);
        CHECK(same);
        if (!same) {
            fprintf(stderr, "frames case %d desc %d nulls_first %d L %lld H %lld\n", t, desc,
                    o_key.nulls_first, (long long)L, (long long)H);
            for (int f = 0; f < NFN; f++)
                fprintf(stderr, "  fn %d: fn %d frame %d lo %lld hi %lld excl %d\n", f, fns[f].fn,
                        fns[f].frame, (long long)fns[f].lo, (long long)fns[f].hi, fns[f].exclude);
            xt_print_rows("got", got, n_got, nc);
            xt_print_rows("want", want, n, nc);
        }
        xo_free(op);
        hs_free(got);
        hs_free(want);
        hs_free(perm);
        hs_free(grp);
        hs_free(rows);
    }
    hs_field_clear(&s);
    LEAK_END();
}

/* A RANGE offset that is NULL (22004) or negative (22013) fails once there
 * are rows, as in PostgreSQL; an empty input raises nothing. */
static void test_window_range_offset_checks(void)
{
    LEAK_START();
    hs_field s;
    schema6(&s);
    for (int c = 0; c < 3; c++) {
        int64_t n = c == 2 ? 0 : 5;
        xt_val *rows = hs_calloc((size_t)(n * NF + 1), sizeof *rows);
        for (int64_t r = 0; r < n; r++) {
            xt_val *v = rows + r * NF;
            v[1].i = r;
            v[4].i = r - 1;
            v[5].i = c == 0 ? -1 : 0;   /* the "offset" column */
            v[5].null = c == 1;
            snprintf(v[3].s, sizeof v[3].s, "a");
        }
        xo_win f = {XO_WIN_COUNT_STAR};
        f.frame = XO_FRAME_RANGE;
        f.lo = 1;
        f.hi = 0;
        f.range_key = 1;
        f.range_lo = 4;
        f.range_hi = -1;
        f.range_off_lo = 5;
        f.range_off_hi = -1;
        xo_ctx ctx = {0};
        xo_op *v = xt_values(&ctx, &s, rows, n, 2), *op;
        xo_sort_key key = {1, false, false};
        hs_error err = {0};
        CHECK_OK(xo_window(v, 0, NULL, 1, &key, 1, &f, &op, &err), &err);
        xt_val *got = NULL;
        int64_t n_got;
        hs_status st = xt_run(op, &got, &n_got, &err);
        if (c == 2) {
            CHECK(st == HS_OK && n_got == 0);
        } else {
            CHECK(st == HS_INVALID);
            CHECK(strstr(err.msg, c == 0 ? "invalid preceding or following size"
                                             : "offset must not be null") != NULL);
        }
        hs_err_clear(&err);
        xo_free(op);
        hs_free(got);
        hs_free(rows);
    }
    hs_field_clear(&s);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_window_random);
    HS_RUN(test_window_frames_random);
    HS_RUN(test_window_range_offset_checks);
    return hs_test_summary();
}
