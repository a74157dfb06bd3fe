/*
 * tests/c/test_exec_srf.c - ProjectSet (exec/srf.c): generate_series and
 * unnest in lockstep, ordinality, the outer form, batches cut inside one
 * row's outputs, timestamp series resumed across batches, errors, leaks.
 *
 * Oracle: the expected rows computed by brute force in C from
 * PostgreSQL's rules (a series start, start + step, ... while not past
 * stop; a NULL argument or list gives nothing; the shorter function is
 * padded with NULL; a row giving nothing gives no row unless outer).
 */
#include "exec_testutil.h"

#include "columnar/column.h"

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

#define MAXL 6

typedef struct in_row {
    int64_t id;
    xt_val a, b, c;
    bool lnull;
    int ln;
    xt_val l[MAXL];
} in_row;

/* id, a, b, c int64; l list<int64> */
static void schema5(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    xt_add_field(s, "id", HS_TYPE_INT64);
    xt_add_field(s, "a", HS_TYPE_INT64);
    xt_add_field(s, "b", HS_TYPE_INT64);
    xt_add_field(s, "c", HS_TYPE_INT64);
    hs_field e, l;
    hs_field_init(&e, "element", HS_TYPE_INT64, true);
    hs_field_init_list(&l, "l", true, &e);
    l.field_id = 5;
    CHECK(hs_field_add_child(s, &l) == HS_OK);
}

static xo_op *rows_op(xo_ctx *ctx, const hs_field *s, const in_row *rows, int n, int chunk)
{
    int nb = (n + chunk - 1) / chunk;
    hs_batch **bs = hs_calloc((size_t)(nb ? nb : 1), sizeof *bs);
    for (int k = 0; k < nb; k++) {
        int start = k * chunk, m = n - start < chunk ? n - start : chunk;
        hs_batch *b;
        CHECK(hs_batch_create(s, m, &b, NULL) == HS_OK);
        for (int r = start; r < start + m; r++) {
            xt_val id = {.i = rows[r].id};
            xt_append(b->cols[0], &id);
            xt_append(b->cols[1], &rows[r].a);
            xt_append(b->cols[2], &rows[r].b);
            xt_append(b->cols[3], &rows[r].c);
            hs_column *l = b->cols[4];
            if (rows[r].lnull) {
                CHECK(hs_col_append_null(l) == HS_OK);
            } else {
                for (int i = 0; i < rows[r].ln; i++)
                    xt_append(l->children[0], &rows[r].l[i]);
                CHECK(hs_col_list_end(l) == HS_OK);
            }
        }
        b->n_rows = m;
        bs[k] = b;
    }
    xo_op *op;
    hs_error err = {0};
    if (xo_values(ctx, s, nb, bs, &op, &err) != HS_OK) {
        fprintf(stderr, "xo_values: %s\n", err.msg);
        abort();
    }
    hs_free(bs);
    return op;
}

static int64_t series_len(const in_row *r)
{
    if (r->a.null || r->b.null || r->c.null)
        return 0;
    int64_t n = 0;
    for (int64_t v = r->a.i; r->c.i > 0 ? v <= r->b.i : v >= r->b.i; v += r->c.i)
        n++;
    return n;
}

/* Reads the output (id, series, elem, ordinality) of op, checking it
 * against the brute force of rows. */
static void check_run(xo_op *op, const in_row *rows, int n, bool outer)
{
    hs_error err = {0};
    int64_t exp_total = 0;
    int r = 0;
    int64_t k = 0;       /* output index within rows[r] */
    int64_t tot_r = -1;  /* outputs of rows[r] */
    int64_t sl = 0;      /* its series' length */
    int64_t seen = 0;
    bool bad = false;
    for (;;) {
        hs_batch *b;
        CHECK_OK(xo_next(op, &b, &err), &err);
        if (!b)
            break;
        CHECK(b->n_rows > 0 && b->n_rows <= XO_BATCH_ROWS);
        CHECK(b->n_cols == 8);
        for (int64_t i = 0; i < b->n_rows && !bad; i++) {
            /* advance to the next input row that has outputs */
            for (;;) {
                if (r >= n) {
                    bad = true;
                    break;
                }
                if (tot_r < 0) {
                    int64_t l = rows[r].lnull ? 0 : rows[r].ln;
                    sl = series_len(&rows[r]);
                    tot_r = sl > l ? sl : l;
                    if (tot_r == 0 && outer)
                        tot_r = -2;
                }
                if (k < (tot_r == -2 ? 1 : tot_r))
                    break;
                r++;
                k = 0;
                tot_r = -1;
            }
            if (bad)
                break;
            const in_row *x = &rows[r];
            xt_val id, sv, ev, ov;
            xt_read(b->cols[0], i, &id);
            xt_read(b->cols[5], i, &sv);
            xt_read(b->cols[6], i, &ev);
            xt_read(b->cols[7], i, &ov);
            bool ok = id.i == x->id;
            if (tot_r == -2) {
                ok = ok && sv.null && ev.null && ov.null;
            } else {
                ok = ok && (k < sl ? !sv.null && sv.i == x->a.i + k * x->c.i : sv.null);
                int ln = x->lnull ? 0 : x->ln;
                ok = ok && (k < ln ? xt_val_cmp(&ev, &x->l[k]) == 0 : ev.null);
                ok = ok && !ov.null && ov.i == k + 1;
            }
            if (!ok) {
                fprintf(stderr, "row %lld (input %d, output %lld) differs\n", (long long)seen, r,
                        (long long)k);
                bad = true;
            }
            k++;
            seen++;
        }
        hs_batch_free(b);
    }
    CHECK(!bad);
    /* the expected count */
    for (int i = 0; i < n; i++) {
        int64_t s = series_len(&rows[i]), l = rows[i].lnull ? 0 : rows[i].ln, t = s > l ? s : l;
        exp_total += t == 0 && outer ? 1 : t;
    }
    CHECK(seen == exp_total);
}

static void random_rows(in_row *rows, int n)
{
    static const int64_t steps[] = {-3, -1, 1, 2, 5};
    for (int r = 0; r < n; r++) {
        in_row *x = &rows[r];
        memset(x, 0, sizeof *x);
        x->id = r;
        x->a.i = (int64_t)(xt_rnd() % 41) - 20;
        x->a.null = xt_rnd() % 10 == 0;
        x->b.i = (int64_t)(xt_rnd() % 41) - 20;
        x->b.null = xt_rnd() % 10 == 0;
        x->c.i = steps[xt_rnd() % 5];
        x->c.null = xt_rnd() % 12 == 0;
        x->lnull = xt_rnd() % 10 == 0;
        x->ln = (int)(xt_rnd() % (MAXL + 1));
        for (int i = 0; i < x->ln; i++) {
            x->l[i].null = xt_rnd() % 10 == 0;
            x->l[i].i = (int64_t)(xt_rnd() % 1000);
        }
    }
}

static void test_lockstep(void)
{
    LEAK_START();
    hs_field s;
    schema5(&s);
    xo_ctx ctx = {0};
    int n = 3000;
    in_row *rows = hs_calloc((size_t)n, sizeof *rows);
    random_rows(rows, n);
    for (int outer = 0; outer < 2; outer++)
        for (int chunk = 1; chunk <= 3000; chunk *= 7) {
            xo_op *v = rows_op(&ctx, &s, rows, n, chunk);
            xo_srf fs[2] = {{.kind = XO_SRF_SERIES_INT, .arg = {1, 2, 3}, .name = "g"},
                            {.kind = XO_SRF_UNNEST, .arg = {4, -1, -1}, .name = "u"}};
            xo_op *ps;
            hs_error err = {0};
            CHECK_OK(xo_projset(v, 2, fs, true, outer, &ps, &err), &err);
            CHECK(ps->schema.n_children == 8);
            CHECK(!strcmp(ps->schema.children[5].name, "g"));
            CHECK(ps->schema.children[6].type == HS_TYPE_INT64);
            CHECK(!strcmp(ps->schema.children[7].name, "ordinality"));
            check_run(ps, rows, n, outer);
            xo_free(ps);
        }
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
}

/* One row whose series is 100,001 values long: cut into batches, resumed. */
static void test_long_row(void)
{
    LEAK_START();
    hs_field s;
    schema5(&s);
    xo_ctx ctx = {0};
    in_row rows[2];
    memset(rows, 0, sizeof rows);
    rows[0].a.i = -50000;
    rows[0].b.i = 50000;
    rows[0].c.i = 1;
    rows[0].ln = 3;
    rows[1].id = 1;
    rows[1].a.i = 7;
    rows[1].b.i = 7;
    rows[1].c.i = 1;
    xo_op *v = rows_op(&ctx, &s, rows, 2, 2);
    xo_srf fs[2] = {{.kind = XO_SRF_SERIES_INT, .arg = {1, 2, 3}},
                    {.kind = XO_SRF_UNNEST, .arg = {4, -1, -1}}};
    xo_op *ps;
    hs_error err = {0};
    CHECK_OK(xo_projset(v, 2, fs, true, false, &ps, &err), &err);
    check_run(ps, rows, 2, false);
    CHECK(ps->rows_out == 100002);
    CHECK(ps->batches_out >= 100002 / XO_BATCH_ROWS);
    xo_free(ps);
    hs_field_clear(&s);
    LEAK_END();
}

/* Timestamps with a month step, resumed across batches: PostgreSQL adds
 * the step to the previous value (Jan 31 -> Feb 29 -> Mar 29 ...). */
static void test_timestamps(void)
{
    LEAK_START();
    hs_field s;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    const char *nm[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        hs_field f;
        hs_field_init(&f, nm[i], i < 2 ? HS_TYPE_TIMESTAMP : HS_TYPE_INTERVAL, true);
        f.unit = HS_UNIT_MICRO;
        f.field_id = i + 1;
        CHECK(hs_field_add_child(&s, &f) == HS_OK);
    }
    hs_batch *b;
    CHECK(hs_batch_create(&s, 2, &b, NULL) == HS_OK);
    const int64_t day = 86400000000LL;
    /* 2024-01-31 and 2024-01-01: days since 1970-01-01 */
    int64_t jan31 = 19753 * day, jan1 = 19723 * day;
    int64_t a[2] = {jan31, jan1}, z[2] = {jan31 + 200 * day, jan1 + 10 * day};
    hs_interval iv[2] = {{0, 0, 1}, {60000000, 0, 0}};   /* 1 month; 1 minute */
    for (int r = 0; r < 2; r++) {
        CHECK(hs_col_append_fixed(b->cols[0], &a[r]) == HS_OK);
        CHECK(hs_col_append_fixed(b->cols[1], &z[r]) == HS_OK);
        CHECK(hs_col_append_fixed(b->cols[2], &iv[r]) == HS_OK);
    }
    b->n_rows = 2;
    xo_ctx ctx = {0};
    xo_op *v;
    hs_error err = {0};
    CHECK_OK(xo_values(&ctx, &s, 1, &b, &v, &err), &err);
    xo_srf f = {.kind = XO_SRF_SERIES_TS, .arg = {0, 1, 2}};
    xo_op *ps;
    CHECK_OK(xo_projset(v, 1, &f, false, false, &ps, &err), &err);
    CHECK(ps->schema.children[3].type == HS_TYPE_TIMESTAMP);
    int64_t n = 0, prev = 0, month_days[7] = {0};
    int nm_seen = 0;
    for (;;) {
        hs_batch *o;
        CHECK_OK(xo_next(ps, &o, &err), &err);
        if (!o)
            break;
        for (int64_t i = 0; i < o->n_rows; i++) {
            int64_t t = HS_COL_VALUES(o->cols[3], int64_t)[i];
            int64_t src = HS_COL_VALUES(o->cols[0], int64_t)[i];
            if (src == jan31) {
                if (nm_seen < 7)
                    month_days[nm_seen] = t / day;
                nm_seen++;
            } else {
                CHECK(n == 0 || t - prev == 60000000 || t == jan1);
                prev = t;
            }
            n++;
        }
        hs_batch_free(o);
    }
    /* Jan 31, Feb 29, Mar 29, Apr 29, May 29, Jun 29, Jul 29 (Aug 18 is the stop) */
    int64_t want[7] = {19753, 19782, 19811, 19842, 19872, 19903, 19933};
    CHECK(nm_seen == 7);
    for (int i = 0; i < 7; i++)
        CHECK(month_days[i] == want[i]);
    CHECK(n == 7 + 10 * 1440 + 1);
    xo_free(ps);
    hs_field_clear(&s);
    LEAK_END();
}

/* unnest(ARRAY[a, b, c]): each row's three values in order, NULLs kept;
 * beside a series of the row, padded in lockstep. */
static void test_values(void)
{
    LEAK_START();
    hs_field s;
    schema5(&s);
    xo_ctx ctx = {0};
    int n = 500;
    in_row *rows = hs_calloc((size_t)n, sizeof *rows);
    random_rows(rows, n);
    xo_op *v = rows_op(&ctx, &s, rows, n, 64);
    int vals[3] = {1, 2, 3};
    xo_srf fs[2] = {{.kind = XO_SRF_VALUES, .vals = vals, .n_vals = 3, .name = "v"},
                    {.kind = XO_SRF_UNNEST, .arg = {4, -1, -1}}};
    xo_op *ps;
    hs_error err = {0};
    CHECK_OK(xo_projset(v, 2, fs, false, false, &ps, &err), &err);
    CHECK(!strcmp(ps->schema.children[5].name, "v"));
    int64_t got = 0, want = 0;
    int r = 0, k = 0;
    for (int i = 0; i < n; i++) {
        int ln = rows[i].lnull ? 0 : rows[i].ln;
        want += ln > 3 ? ln : 3;
    }
    bool ok = true;
    for (;;) {
        hs_batch *b;
        CHECK_OK(xo_next(ps, &b, &err), &err);
        if (!b)
            break;
        for (int64_t i = 0; i < b->n_rows && ok; i++) {
            int ln = rows[r].lnull ? 0 : rows[r].ln, tot = ln > 3 ? ln : 3;
            xt_val id, x, e;
            xt_read(b->cols[0], i, &id);
            xt_read(b->cols[5], i, &x);
            xt_read(b->cols[6], i, &e);
            const xt_val *src[3] = {&rows[r].a, &rows[r].b, &rows[r].c};
            ok = id.i == rows[r].id && (k < 3 ? xt_val_cmp(&x, src[k]) == 0 : x.null) &&
                 (k < ln ? xt_val_cmp(&e, &rows[r].l[k]) == 0 : e.null);
            got++;
            if (++k == tot) {
                r++;
                k = 0;
            }
        }
        hs_batch_free(b);
    }
    CHECK(ok);
    CHECK(got == want);
    xo_free(ps);
    /* columns of different types are refused */
    v = rows_op(&ctx, &s, rows, n, 64);
    int mixed[2] = {1, 4};
    xo_srf bad = {.kind = XO_SRF_VALUES, .vals = mixed, .n_vals = 2};
    CHECK(xo_projset(v, 1, &bad, false, false, &ps, &err) == HS_INVALID);
    hs_free(rows);
    hs_field_clear(&s);
    LEAK_END();
}

/* string_to_table: delimiters, NULL delimiter (UTF-8 characters), empty
 * delimiter, empty string, null_string, and one row of 20,000 pieces cut
 * across batches. */
static void test_split(void)
{
    LEAK_START();
    hs_field s;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    xt_add_field(&s, "s", HS_TYPE_STRING);
    xt_add_field(&s, "d", HS_TYPE_STRING);
    xt_add_field(&s, "n", HS_TYPE_STRING);
    hs_buf big = {0};
    for (int i = 0; i < 20000; i++)
        CHECK(hs_buf_printf(&big, "%s%d", i ? ";" : "", i) == HS_OK);
    const char *in[][3] = {{"a,b,,c", ",", "b"}, {"h\xc3\xa9l", NULL, NULL}, {"", ",", NULL},
                           {"abc", "", NULL}, {NULL, ",", NULL}, {"x--y--", "--", NULL},
                           {(const char *)big.data, ";", NULL}};
    int nr = 7;
    hs_batch *b;
    CHECK(hs_batch_create(&s, nr, &b, NULL) == HS_OK);
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < 3; c++)
            CHECK((in[r][c] ? hs_col_append_bytes(b->cols[c], in[r][c], strlen(in[r][c]))
                            : hs_col_append_null(b->cols[c])) == HS_OK);
    b->n_rows = nr;
    xo_ctx ctx = {0};
    xo_op *v;
    hs_error err = {0};
    CHECK_OK(xo_values(&ctx, &s, 1, &b, &v, &err), &err);
    xo_srf f = {.kind = XO_SRF_SPLIT, .arg = {0, 1, 2}};
    xo_op *ps;
    CHECK_OK(xo_projset(v, 1, &f, true, false, &ps, &err), &err);
    /* expected (row, piece) in order; "\1" = NULL */
    const char *want[] = {"a", "\1", "", "c", "h", "\xc3\xa9", "l", "abc", "x", "y", ""};
    int nw = 11, got = 0;
    bool ok = true;
    for (;;) {
        hs_batch *o;
        CHECK_OK(xo_next(ps, &o, &err), &err);
        if (!o)
            break;
        for (int64_t i = 0; i < o->n_rows; i++, got++) {
            xt_val x, ord;
            xt_read(o->cols[3], i, &x);
            xt_read(o->cols[4], i, &ord);
            if (got < nw) {
                ok = ok && (!strcmp(want[got], "\1") ? x.null : !x.null && !strcmp(x.s, want[got]));
            } else {
                char e[16];
                snprintf(e, sizeof e, "%d", got - nw);
                ok = ok && !x.null && !strcmp(x.s, e) && ord.i == got - nw + 1;
            }
        }
        hs_batch_free(o);
    }
    CHECK(ok);
    CHECK(got == nw + 20000);
    xo_free(ps);
    hs_buf_free(&big);
    hs_field_clear(&s);
    LEAK_END();
}

/* Rows whose pieces end exactly at a batch boundary (2 x XO_BATCH_ROWS
 * pieces) or run past several (by character, NULL delimiter), then a
 * short row: each piece once, in order (the resume point of a row kept
 * between batches). */
static void test_split_batches(void)
{
    LEAK_START();
    hs_field s;
    hs_field_init(&s, "", HS_TYPE_STRUCT, false);
    xt_add_field(&s, "s", HS_TYPE_STRING);
    xt_add_field(&s, "d", HS_TYPE_STRING);
    int exact = 2 * XO_BATCH_ROWS, chars = 2 * XO_BATCH_ROWS + 5;
    hs_buf a = {0}, c = {0};
    for (int i = 0; i < exact; i++)
        CHECK(hs_buf_printf(&a, "%s%d", i ? "," : "", i) == HS_OK);
    for (int i = 0; i < chars; i++)
        CHECK(hs_buf_printf(&c, "%c", 'a' + i % 26) == HS_OK);
    hs_batch *b;
    CHECK(hs_batch_create(&s, 3, &b, NULL) == HS_OK);
    CHECK(hs_col_append_bytes(b->cols[0], a.data, a.len) == HS_OK);
    CHECK(hs_col_append_bytes(b->cols[1], ",", 1) == HS_OK);
    CHECK(hs_col_append_bytes(b->cols[0], c.data, c.len) == HS_OK);
    CHECK(hs_col_append_null(b->cols[1]) == HS_OK);
    CHECK(hs_col_append_bytes(b->cols[0], "x,y", 3) == HS_OK);
    CHECK(hs_col_append_bytes(b->cols[1], ",", 1) == HS_OK);
    b->n_rows = 3;
    xo_ctx ctx = {0};
    xo_op *v;
    hs_error err = {0};
    CHECK_OK(xo_values(&ctx, &s, 1, &b, &v, &err), &err);
    xo_srf f = {.kind = XO_SRF_SPLIT, .arg = {0, 1, -1}};
    xo_op *ps;
    CHECK_OK(xo_projset(v, 1, &f, false, false, &ps, &err), &err);
    int64_t got = 0;
    bool ok = true;
    for (;;) {
        hs_batch *o;
        CHECK_OK(xo_next(ps, &o, &err), &err);
        if (!o)
            break;
        for (int64_t i = 0; i < o->n_rows; i++, got++) {
            xt_val x;
            xt_read(o->cols[2], i, &x);
            char e[16];
            if (got < exact)
                snprintf(e, sizeof e, "%d", (int)got);
            else if (got < exact + chars)
                snprintf(e, sizeof e, "%c", (int)('a' + (got - exact) % 26));
            else
                snprintf(e, sizeof e, "%s", got == exact + chars ? "x" : "y");
            ok = ok && !x.null && !strcmp(x.s, e);
        }
        hs_batch_free(o);
    }
    CHECK(ok);
    CHECK(got == exact + chars + 2);
    xo_free(ps);
    hs_buf_free(&a);
    hs_buf_free(&c);
    hs_field_clear(&s);
    LEAK_END();
}

static void test_errors(void)
{
    LEAK_START();
    hs_field s;
    schema5(&s);
    xo_ctx ctx = {0};
    in_row rows[1];
    memset(rows, 0, sizeof rows);
    rows[0].b.i = 5;   /* step 0 */
    xo_op *v = rows_op(&ctx, &s, rows, 1, 1);
    xo_srf f = {.kind = XO_SRF_SERIES_INT, .arg = {1, 2, 3}};
    xo_op *ps;
    hs_error err = {0};
    CHECK_OK(xo_projset(v, 1, &f, false, false, &ps, &err), &err);
    hs_batch *b = NULL;
    CHECK(xo_next(ps, &b, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "step size cannot equal zero") != NULL);
    xo_free(ps);
    hs_err_clear(&err);
    /* unnest of a column that is not a list is refused at construction */
    v = rows_op(&ctx, &s, rows, 1, 1);
    xo_srf u = {.kind = XO_SRF_UNNEST, .arg = {1, -1, -1}};
    CHECK(xo_projset(v, 1, &u, false, false, &ps, &err) == HS_INVALID);
    hs_err_clear(&err);
    /* a column out of range too */
    v = rows_op(&ctx, &s, rows, 1, 1);
    xo_srf g = {.kind = XO_SRF_SERIES_INT, .arg = {1, 9, -1}};
    CHECK(xo_projset(v, 1, &g, false, false, &ps, &err) == HS_INVALID);
    hs_field_clear(&s);
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_lockstep);
    HS_RUN(test_long_row);
    HS_RUN(test_timestamps);
    HS_RUN(test_values);
    HS_RUN(test_split);
    HS_RUN(test_split_batches);
    HS_RUN(test_errors);
    return hs_test_summary();
}
