/*
 * tests/c/test_expr_fastparse.c - the hand-written filter parser
 * (expr/expr_fastparse.c) against libpg_query's path (ex_parse_filter).
 *
 * Oracle: ex_parse_filter, which parses with libpg_query.  For every text of
 * a hand-written list and of a generated corpus (the fast forms with
 * whitespace, case, quoting, literal spellings and nesting varied, mixed
 * with forms the fast parser must leave alone and with random one-byte
 * damage): when the fast parser takes the text, the slow path must accept
 * it too and bind the same tree, node by node (kind, type, location,
 * operator, constant value, column, IN set, ...), format to the same text
 * and select the same rows of a batch; when the slow path refuses a text,
 * the fast parser must not take it; and ex_parse_filter_fast must give the
 * slow path's status and message.  The corpus must reach the fast path
 * (counts checked), so the comparison cannot pass by declining everything.
 */
#include "harness.h"

#include "base/mem.h"
#include "columnar/column.h"
#include "expr/expr.h"
#include "expr/expr_fastparse.h"
#include "expr/expr_int.h"
#include "expr_same.h"

#include <ctype.h>
#include <math.h>
#include <pg_query.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* schema and batch                                                    */

static void add_field(hs_field *parent, const char *name, hs_type t, int id)
{
    hs_field f;
    hs_field_init(&f, name, t, true);
    f.field_id = id;
    if (t == HS_TYPE_DECIMAL128) {
        f.precision = 9;
        f.scale = 2;
    }
    if (t == HS_TYPE_TIMESTAMP)
        f.unit = HS_UNIT_MILLI;
    if (hs_field_add_child(parent, &f) != HS_OK)
        abort();
}

/* Columns of every simple kind, a struct, names that are keywords, mixed
 * case, a dot, a non-ASCII letter. */
static void make_schema(hs_field *s)
{
    hs_field_init(s, "", HS_TYPE_STRUCT, false);
    add_field(s, "id", HS_TYPE_INT64, 1);
    add_field(s, "i", HS_TYPE_INT32, 2);
    add_field(s, "d", HS_TYPE_FLOAT64, 3);
    add_field(s, "s", HS_TYPE_STRING, 4);
    add_field(s, "b", HS_TYPE_BOOL, 5);
    add_field(s, "dt", HS_TYPE_DATE32, 6);
    add_field(s, "ts", HS_TYPE_TIMESTAMP, 7);
    add_field(s, "dec", HS_TYPE_DECIMAL128, 8);
    hs_field st;
    hs_field_init(&st, "st", HS_TYPE_STRUCT, true);
    st.field_id = 9;
    add_field(&st, "a", HS_TYPE_INT64, 10);
    if (hs_field_add_child(s, &st) != HS_OK)
        abort();
    add_field(s, "f", HS_TYPE_FLOAT32, 11);
    add_field(s, "Mixed", HS_TYPE_INT32, 12);
    add_field(s, "x.y", HS_TYPE_INT32, 13);
    add_field(s, "sel", HS_TYPE_INT64, 14);
    add_field(s, "name", HS_TYPE_STRING, 15);     /* unreserved keyword */
    add_field(s, "user", HS_TYPE_STRING, 16);     /* reserved keyword */
    add_field(s, "\xc3\x84pfel", HS_TYPE_INT16, 17);
    add_field(s, "u8", HS_TYPE_UINT8, 18);
    add_field(s, "label", HS_TYPE_STRING, 19);    /* unreserved keywords */
    add_field(s, "value", HS_TYPE_INT32, 20);
    add_field(s, "type", HS_TYPE_STRING, 21);
    add_field(s, "time", HS_TYPE_INT32, 22);      /* col_name keywords */
    add_field(s, "between", HS_TYPE_INT32, 23);
    add_field(s, "window", HS_TYPE_INT32, 24);    /* reserved */
    add_field(s, "left", HS_TYPE_INT32, 25);      /* type_func_name */
}

#define NROWS 24

static hs_batch *make_batch(const hs_field *schema)
{
    hs_batch *b;
    if (hs_batch_create(schema, NROWS, &b, NULL) != HS_OK)
        abort();
    static const char *const words[] = {"", "a", "abc", "O'Brien", "\xc3\x84pfel", "zz", "a%b"};
    for (int64_t r = 0; r < NROWS; r++) {
        bool nul = r % 5 == 4;
        int32_t i = (int32_t)(r * 7 % 11) - 5;
        double d = r == 6 ? -0.0 : r == 7 ? INFINITY : (double)r / 4 - 1;
        uint8_t bo = r % 2;
        int32_t dt = 19723 + (int32_t)r;
        int64_t ts = (19723 + r) * 86400000LL + r * 3600000LL;
        __int128 dec = r * 37 - 200;
        float f = (float)r / 2;
        int64_t a = r - 8, sel = (r * 5) % NROWS;
        int16_t ap = (int16_t)(r - 3);
        uint8_t u8 = (uint8_t)(r * 11);
        const char *w = words[r % 7];
        hs_status st = HS_OK;
        hs_column **c = b->cols;
        st |= hs_col_append_fixed(c[0], &r);
        st |= nul ? hs_col_append_null(c[1]) : hs_col_append_fixed(c[1], &i);
        st |= nul ? hs_col_append_null(c[2]) : hs_col_append_fixed(c[2], &d);
        st |= nul ? hs_col_append_null(c[3]) : hs_col_append_bytes(c[3], w, strlen(w));
        st |= nul ? hs_col_append_null(c[4]) : hs_col_append_fixed(c[4], &bo);
        st |= nul ? hs_col_append_null(c[5]) : hs_col_append_fixed(c[5], &dt);
        st |= nul ? hs_col_append_null(c[6]) : hs_col_append_fixed(c[6], &ts);
        st |= nul ? hs_col_append_null(c[7]) : hs_col_append_fixed(c[7], &dec);
        if (r % 7 == 3) {
            st |= hs_col_append_null(c[8]);
        } else {
            st |= hs_col_append_fixed(c[8]->children[0], &a);
            st |= hs_col_struct_append_valid(c[8]);
        }
        st |= nul ? hs_col_append_null(c[9]) : hs_col_append_fixed(c[9], &f);
        st |= hs_col_append_fixed(c[10], &i);
        st |= hs_col_append_fixed(c[11], &i);
        st |= hs_col_append_fixed(c[12], &sel);
        st |= hs_col_append_bytes(c[13], w, strlen(w));
        st |= nul ? hs_col_append_null(c[14]) : hs_col_append_bytes(c[14], w, strlen(w));
        st |= hs_col_append_fixed(c[15], &ap);
        st |= hs_col_append_fixed(c[16], &u8);
        st |= nul ? hs_col_append_null(c[17]) : hs_col_append_bytes(c[17], w, strlen(w));
        int32_t v2 = (int32_t)(r % 6) - 2;
        st |= nul ? hs_col_append_null(c[18]) : hs_col_append_fixed(c[18], &v2);
        st |= hs_col_append_bytes(c[19], words[(r + 3) % 7], strlen(words[(r + 3) % 7]));
        for (int k = 20; k <= 23; k++) {
            int32_t v = (int32_t)((r * (k - 17)) % 9) - 4;
            st |= hs_col_append_fixed(c[k], &v);
        }
        if (st != HS_OK)
            abort();
    }
    b->n_rows = NROWS;
    return b;
}

/* ------------------------------------------------------------------ */
/* one text through both paths                                         */

static hs_field g_schema;
static hs_batch *g_batch;
static int g_fast, g_slow_ok, g_total;

/* Checks the text; returns whether the fast parser took it. */
static bool check_text(const char *text)
{
    g_total++;
    hs_error es = {0}, ef = {0}, ec = {0};
    ex_expr *slow = NULL, *fast = NULL, *comb = NULL;
    hs_status ss = ex_parse_filter(text, &g_schema, &slow, &es);
    hs_status sf = ex_fastparse_filter(text, &g_schema, &fast, &ef);
    hs_status sc = ex_parse_filter_fast(text, &g_schema, &comb, &ec);
    bool ok = true;
    if (ss == HS_OK)
        g_slow_ok++;
    if (sf == HS_OK) {
        g_fast++;
        ok = ss == HS_OK && ef.code == HS_OK && same_expr(slow, fast);
        char *f1 = NULL, *f2 = NULL;
        if (ok) {
            ok = ex_format(slow, &f1, NULL) == HS_OK && ex_format(fast, &f2, NULL) == HS_OK &&
                 !strcmp(f1, f2);
        }
        hs_free(f1);
        hs_free(f2);
        if (ok) {
            uint8_t s1[NROWS] = {0}, s2[NROWS] = {0};
            int64_t m1 = -1, m2 = -2;
            hs_error e1 = {0}, e2 = {0};
            hs_status r1 = ex_eval_filter(slow, g_batch, NULL, s1, &m1, &e1);
            hs_status r2 = ex_eval_filter(fast, g_batch, NULL, s2, &m2, &e2);
            ok = r1 == r2 && (r1 != HS_OK || (m1 == m2 && !memcmp(s1, s2, sizeof s1))) &&
                 !strcmp(e1.msg, e2.msg);
        }
    } else {
        ok = sf == HS_UNSUPPORTED && fast == NULL && ef.code == HS_OK;
    }
    ok = ok && sc == ss && !strcmp(es.msg, ec.msg) && (ss != HS_OK || same_node(slow->root, comb->root));
    if (!ok)
        fprintf(stderr, "fast parser differs on [%s]: slow %d (%s), fast %d, combined %d (%s)\n",
                text, (int)ss, es.msg, (int)sf, (int)sc, ec.msg);
    CHECK(ok);
    ex_free(slow);
    ex_free(fast);
    ex_free(comb);
    return sf == HS_OK;
}

/* ------------------------------------------------------------------ */
/* hand-written cases                                                  */

/* Texts the fast parser must take (and bind as the slow path does). */
static const char *const FAST[] = {
    "sel < 5000", "sel <   5000", "sel<5000", "\tsel\n<\r5000 ", "SEL < 5000", "\"sel\" < 5000",
    "id = 0", "id = -0", "id = -5", "id = - 5", "id<-5", "id=-5", "id<>-5", "id<=-5", "id>=-5",
    "id >-5", "-5 = id", "id != 3", "id <> 3", "id >= 2147483647", "id > 2147483648",
    "id > -2147483648", "id > -2147483649", "id < 9223372036854775807",
    "id < 9223372036854775808", "id = 00012", "i < 1.5", "i < -1.5", "i < .5", "i < 1.",
    "i < 1e3", "i < 1.5E-3", "i < -1e+2", "d > 0.25", "d <= -1", "f < 3", "s = 'abc'", "s = ''", "s = 'O''Brien'", "s = 'x\\y'", "s < 'b'",
    "s = '\xc3\x84pfel'", "b", "b = true", "b = FALSE", "NOT b", "not not b", "b = null",
    "null", "true", "false", "s IS NULL", "s is not null", "(s) IS NULL", "b IS NULL",
    "i IN (1, 2, 3)", "i in (-1,0,1)", "i NOT IN (1, NULL)", "s IN ('a', 'abc')",
    "s not in ('zz')", "d IN (0.25, -1, 1e0)", "i IN (id, sel)", "i IN ((1), 2)",
    "i BETWEEN 1 AND 3", "i between -3 and -1", "i NOT BETWEEN 1 AND 3",
    "i BETWEEN SYMMETRIC 3 AND 1", "i NOT BETWEEN SYMMETRIC 3 AND 1",
    "i BETWEEN ASYMMETRIC 1 AND 3", "s BETWEEN 'a' AND 'b'", "i between 1 and 2 and b",
    "i = 1 AND s = 'a'", "i = 1 OR s = 'a'", "i = 1 AND s = 'a' AND d > 0",
    "(i = 1 AND s = 'a') AND d > 0", "i = 1 AND (s = 'a' AND d > 0)", "i = 1 OR s = 'a' OR d > 0",
    "(i = 1 OR s = 'a') OR d > 0", "i = 1 OR s = 'a' AND d > 0", "(i = 1 OR s = 'a') AND d > 0",
    "NOT (i = 1 OR s = 'a')", "NOT i = 1", "NOT i IS NULL", "not (b) and (not b)",
    "((((i = 1))))", "(i) = (1)", "(i = 1) = true", "(i = 1) IS NULL", "i = sel",
    "\"Mixed\" > 0", "\"x.y\" < 3", "\xc3\x84pfel > 0", "u8 > 100", "ts IS NULL",
    "sel < 5000 AND sel >= 0", "id = 1 and i = 2 or id = 3 and not b",
    /* unreserved and col_name keywords are column names (ColId) */
    "name = 'a'", "NAME <> 'abc'", "label = 'x'", "label IS NOT NULL", "(label) IS NULL",
    "value > 1", "value IN (1, 2, value)", "NOT value = 1", "type IN ('a', 'zz')",
    "type = label", "time BETWEEN 1 AND 3", "time NOT BETWEEN SYMMETRIC 3 AND 1",
    "between = 1", "between between 1 and 2", "i between between and value",
    "between not between time and value", "value = 1 AND type = 'a' OR label IS NULL",
    "\"window\" = 1", "\"left\" < 2", "\"user\" = 'a'", "dec > 1.25",
};

/* Texts the fast parser must leave to libpg_query (valid or not). */
static const char *const SLOW[] = {
    "", "   ", "sel < 5000;", "sel < 5000 -- c", "sel /* c */ < 5000", "sel < 5000 + 1",
    "sel + 1 < 5000", "sel::int8 < 5", "CAST(sel AS int8) < 5", "abs(sel) < 5",
    "s LIKE 'a%'", "s NOT LIKE 'a%'", "s ILIKE 'A%'", "s ~ 'a'", "b IS TRUE", "b IS NOT FALSE",
    "i IS DISTINCT FROM 1", "i = ANY('{1,2}')", "i IN (SELECT 1)", "i = (SELECT 1)",
    "mixed > 0", "Mixed > 0", "st IS NULL", "st.a > 0", "(st).a > 0", "name 'a' = s",
    "user = 'a'", "window = 1", "left = 1", "i = window", "i IN (left)", "time '10:00' = s",
    "value '1' = 1", "i BETWEEN window AND 2", "label(1) = 1", "x.y < 3", "\"\" = 1", "i = 1 = 2", "i < 1 < 2", "i IS NULL IS NULL",
    "i = 1 IS NULL", "i = - - 1", "i = -(1)", "i = +1", "i =+ 1", "i !=-1", "i <--1",
    "i = 5abc", "i = 1e", "i = 1.5.3", "i = 1..2", "i = 0x1F", "s = E'a'", "s = e'\\n'",
    "s = N'a'", "s = B'01'", "s = X'1F'", "s = U&'a'", "s = $$a$$", "s = 'a'\n'b'",
    "s = 'a' 'b'", "s = 'unterminated", "\"unterminated = 1", "i IN ()", "i IN (1,)",
    "i IN 1", "i BETWEEN 1", "i BETWEEN 1 OR 2", "i BETWEEN 1 + 1 AND 3", "(i = 1", "i = 1)",
    "i = ", "= 1", "AND", "i = 1 AND", "NOT", "i ISNULL", "i NOTNULL", "date '2024-01-01' < dt",
    "dt > '2024-01-01'::date", "i = 1 AND i = 2 ORDER BY 1", "i = 1 UNION SELECT 1",
    "nosuch = 1", "s = 1", "i = 'x'", "i", "1", "'x'", "s", "i = $1", "i = ?", "i =\f1",
    "a$b = 1", "i = @1", "i = |/4", "i % 2 = 0", "i = 1 OR", "ts > now()", "i = CURRENT_DATE",
    "i < 1 && i > 0", "i <=> 1", "dt > 19730", "i => 1", "i = ALL(ARRAY[1])", "ROW(i) IS NULL",
};

static void test_hand_cases(void)
{
    for (size_t k = 0; k < sizeof FAST / sizeof FAST[0]; k++) {
        if (!check_text(FAST[k]))
            fprintf(stderr, "fast parser declined [%s]\n", FAST[k]);
        ex_expr *e = NULL;
        CHECK(ex_fastparse_filter(FAST[k], &g_schema, &e, NULL) == HS_OK);
        ex_free(e);
    }
    for (size_t k = 0; k < sizeof SLOW / sizeof SLOW[0]; k++) {
        if (check_text(SLOW[k]))
            fprintf(stderr, "fast parser took [%s]\n", SLOW[k]);
        ex_expr *e = NULL;
        CHECK(ex_fastparse_filter(SLOW[k], &g_schema, &e, NULL) == HS_UNSUPPORTED);
        ex_free(e);
    }
    /* a 63-byte identifier is a name; 64 bytes would be truncated */
    char t[200];
    snprintf(t, sizeof t, "%063d = 1", 0);
    t[0] = 'z';
    CHECK(!check_text(t));   /* no such column: the slow path's error */
    CHECK(!check_text("i IN (1) IN (true)"));
}

/* ------------------------------------------------------------------ */
/* the generated corpus                                                */

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(uint32_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

typedef struct gbuf {
    char s[4096];
    size_t n;
    bool full;
} gbuf;

static void put(gbuf *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(g->s + g->n, sizeof g->s - g->n, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof g->s - g->n) {
        g->full = true;
        g->n = sizeof g->s - 1;
    } else {
        g->n += (size_t)w;
    }
}

static void ws(gbuf *g)
{
    static const char *const W[] = {" ", " ", " ", "  ", "\n", "\t", " \r\n "};
    put(g, "%s", W[rnd(sizeof W / sizeof W[0])]);
}

/* a keyword in a random case */
static void kw(gbuf *g, const char *w)
{
    char b[32];
    size_t k = 0;
    int mode = (int)rnd(3);
    for (; w[k] && k < sizeof b - 1; k++)
        b[k] = mode == 0 ? w[k] : mode == 1 ? (char)(w[k] - 32 * (w[k] >= 'a' && w[k] <= 'z'))
                                            : (rnd(2) ? (char)(w[k] - 32 * (w[k] >= 'a' && w[k] <= 'z')) : w[k]);
    b[k] = '\0';
    put(g, "%s", b);
}

static const char *const COLS[] = {"id", "i", "d", "s", "b", "sel", "dec", "f", "u8", "dt",
                                   "\"Mixed\"", "\"x.y\"", "\xc3\x84pfel", "\"i\"", "ID", "Sel",
                                   "name", "label", "Value", "type", "time", "between",
                                   "window", "left", "\"window\""};
static const char *const STRS[] = {"'a'", "'abc'", "''", "'O''Brien'", "'zz'", "'\xc3\x84pfel'",
                                   "'a%b'", "'x\\y'", "'1'"};

static void literal(gbuf *g)
{
    switch (rnd(12)) {
    case 0: put(g, "%d", (int)rnd(30) - 5); break;
    case 1: put(g, "-%s%u", rnd(2) ? " " : "", rnd(20)); break;
    case 2: put(g, "%s", (const char *[]){"2147483647", "2147483648", "-2147483648", "-2147483649",
                                          "9223372036854775807", "9223372036854775808",
                                          "-9223372036854775808", "000", "0007"}[rnd(9)]); break;
    case 3: put(g, "%s", (const char *[]){"1.5", "-0.25", ".5", "1.", "1e3", "2.5E-1", "-1e+1",
                                          "- 3.75", "12345678901234567890.5"}[rnd(9)]); break;
    case 4: case 5: put(g, "%s", STRS[rnd(sizeof STRS / sizeof STRS[0])]); break;
    case 6: kw(g, rnd(2) ? "true" : "false"); break;
    case 7: kw(g, "null"); break;
    default: put(g, "%u", rnd(NROWS)); break;
    }
}

static void operand(gbuf *g, int depth)
{
    uint32_t r = rnd(10);
    if (r < 5)
        put(g, "%s", COLS[rnd(sizeof COLS / sizeof COLS[0])]);
    else if (r < 9 || depth > 3)
        literal(g);
    else {
        put(g, "(");
        operand(g, depth + 1);
        put(g, ")");
    }
}

/* forms the fast parser declines, valid SQL or not */
static void other_pred(gbuf *g)
{
    static const char *const O[] = {
        "s LIKE 'a%'", "i + 1 > 2", "i::int8 = 1", "abs(i) < 3", "b IS TRUE", "s || 'x' = 'ax'",
        "CASE WHEN i > 0 THEN true ELSE false END", "i IS DISTINCT FROM 1", "dt > '2024-01-05'",
        "ts < '2024-01-05 10:00'", "coalesce(i, 0) = 0", "st IS NULL", "st.a > 0", "i = -(1)",
        "lower(s) = 'a'", "i % 2 = 0", "s ILIKE 'A%'", "d = 'NaN'", "i = ANY(ARRAY[1, 2])"};
    put(g, "%s", O[rnd(sizeof O / sizeof O[0])]);
}

static void pred(gbuf *g, int depth)
{
    static const char *const CMP[] = {"<", ">", "=", "<=", ">=", "<>", "!="};
    uint32_t r = rnd(20);
    operand(g, depth);
    if (r < 10) {
        if (rnd(3))
            ws(g);
        put(g, "%s", CMP[rnd(7)]);
        if (rnd(3))
            ws(g);
        operand(g, depth);
    } else if (r < 12) {
        ws(g);
        kw(g, "is");
        ws(g);
        if (rnd(2)) {
            kw(g, "not");
            ws(g);
        }
        kw(g, "null");
    } else if (r < 15) {
        ws(g);
        if (rnd(3) == 0) {
            kw(g, "not");
            ws(g);
        }
        kw(g, "in");
        put(g, rnd(2) ? " (" : "(");
        int n = 1 + (int)rnd(5);
        for (int k = 0; k < n; k++) {
            if (k)
                put(g, rnd(2) ? ", " : ",");
            if (rnd(4))
                literal(g);
            else
                operand(g, depth);
        }
        put(g, ")");
    } else if (r < 18) {
        ws(g);
        if (rnd(3) == 0) {
            kw(g, "not");
            ws(g);
        }
        kw(g, "between");
        ws(g);
        if (rnd(4) == 0) {
            kw(g, rnd(2) ? "symmetric" : "asymmetric");
            ws(g);
        }
        operand(g, depth);
        ws(g);
        kw(g, "and");
        ws(g);
        operand(g, depth);
    } else if (r < 19) {
        /* a bare operand (a boolean column, a literal) */
    } else {
        put(g, " ");
        other_pred(g);
    }
}

static void expr(gbuf *g, int depth)
{
    uint32_t r = depth > 4 ? rnd(10) : rnd(16);
    if (r < 9) {
        pred(g, depth);
    } else if (r < 10) {
        other_pred(g);
    } else if (r < 12) {
        kw(g, "not");
        ws(g);
        expr(g, depth + 1);
    } else if (r < 14) {
        expr(g, depth + 1);
        ws(g);
        kw(g, rnd(2) ? "and" : "or");
        ws(g);
        expr(g, depth + 1);
    } else {
        put(g, "(");
        expr(g, depth + 1);
        put(g, ")");
    }
}

static void test_corpus(int n)
{
    int fast0 = g_fast, total0 = g_total;
    for (int k = 0; k < n; k++) {
        gbuf g = {.n = 0};
        expr(&g, 0);
        if (g.full)
            continue;
        g.s[g.n] = '\0';
        if (rnd(8) == 0 && g.n > 0) {   /* one byte damaged */
            static const char DAMAGE[] = "()',.-=<>!\"; x1e|:@$";
            size_t at = rnd((uint32_t)g.n);
            if (rnd(2))
                g.s[at] = DAMAGE[rnd(sizeof DAMAGE - 1)];
            else
                memmove(g.s + at, g.s + at + 1, g.n - at);
        }
        check_text(g.s);
    }
    int fast = g_fast - fast0, total = g_total - total0;
    fprintf(stderr, "corpus: %d texts, %d through the fast parser, %d bound in all\n", total, fast,
            g_slow_ok);
    CHECK(fast * 4 > total);   /* the comparison reaches the fast path */
}

static void test_generated_corpus(void)
{
    test_corpus(getenv("HS_TEST_QUICK") ? 3000 : 20000);
}

static void test_no_leaks(void)
{
    int64_t live = hs_mem_live_count();
    for (size_t k = 0; k < sizeof FAST / sizeof FAST[0]; k++) {
        ex_expr *e = NULL;
        if (ex_fastparse_filter(FAST[k], &g_schema, &e, NULL) == HS_OK)
            ex_free(e);
    }
    CHECK(hs_mem_live_count() == live);
}

/* ------------------------------------------------------------------ */
/* every keyword as a column name                                      */

/* One varint of a protobuf message at *i (false: truncated). */
static bool pb_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
    *v = 0;
    for (int sh = 0; *i < n && sh < 64; sh += 7) {
        uint8_t b = p[(*i)++];
        *v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* libpg_query's category of w, scanned alone: 'U', 'C', 'T', 'R', 0 (no
 * keyword), '?' (not one token).  pg_query_scan's result is the protobuf
 * ScanResult {1: version, 2: repeated ScanToken {1: start, 2: end,
 * 4: token, 5: keyword_kind}} of pg_query.proto, read here by hand (the
 * protobuf-c headers are not installed). */
static char pg_category(const char *w)
{
    PgQueryScanResult r = pg_query_scan(w);
    char c = '?';
    int tokens = 0;
    uint64_t kind = 0;
    const uint8_t *p = (const uint8_t *)r.pbuf.data;
    size_t n = r.error ? 0 : r.pbuf.len, i = 0;
    bool ok = !r.error;
    while (ok && i < n) {
        uint64_t key, v;
        ok = pb_varint(p, n, &i, &key);
        if (ok && (key & 7) == 0) {
            ok = pb_varint(p, n, &i, &v);
        } else if (ok && (key & 7) == 2) {
            ok = pb_varint(p, n, &i, &v) && v <= n - i;
            if (ok && key >> 3 == 2) {   /* a ScanToken */
                tokens++;
                size_t j = i, end = i + (size_t)v;
                while (ok && j < end) {
                    uint64_t k2, v2;
                    ok = pb_varint(p, end, &j, &k2) && (k2 & 7) == 0 && pb_varint(p, end, &j, &v2);
                    if (ok && k2 >> 3 == 5)
                        kind = v2;
                }
            }
            i += (size_t)v;
        } else {
            ok = false;
        }
    }
    if (ok && tokens == 1)
        c = kind == 1 ? 'U' : kind == 2 ? 'C' : kind == 3 ? 'T' : kind == 4 ? 'R' : 0;
    pg_query_free_scan_result(r);
    return c;
}

/* The fast parser's keywords and words that are keywords in other
 * PostgreSQL versions or easily taken for ones. */
static int keyword_words(char (*out)[64], int max)
{
    int n = 0;
    const char *w;
    for (int k = 0; (w = ex_keyword_at(k)) != NULL && n < max; k++)
        snprintf(out[n++], 64, "%s", w);
    static const char *const EXTRA[] = {"system_user", "json", "json_object", "format", "window",
                                        "label", "uuid", "date", "text", "bool", "id", "nosuch"};
    for (size_t k = 0; k < sizeof EXTRA / sizeof EXTRA[0] && n < max; k++) {
        bool dup = false;
        for (int j = 0; j < n && !dup; j++)
            dup = !strcmp(out[j], EXTRA[k]);
        if (!dup)
            snprintf(out[n++], 64, "%s", EXTRA[k]);
    }
    return n;
}

/* For every keyword: our category is libpg_query's; with a column of that
 * name, the fast parser takes "k = 1" exactly when libpg_query's path binds
 * it (unreserved and col_name keywords), and every form below agrees with
 * the slow path node by node (check_text). */
static void test_every_keyword(void)
{
    static char words[700][64];
    int n = keyword_words(words, 700);
    CHECK(n > 450);
    int mismatched = 0;
    for (int k = 0; k < n; k++) {
        char pc = pg_category(words[k]), ours = ex_keyword_category(words[k]);
        if (pc != ours) {
            mismatched++;
            fprintf(stderr, "keyword %s: libpg_query says %c, the fast parser %c\n", words[k],
                    pc ? pc : '-', ours ? ours : '-');
        }
    }
    CHECK(mismatched == 0);
    /* a schema of one int32 column per word */
    hs_field ks;
    hs_field_init(&ks, "", HS_TYPE_STRUCT, false);
    add_field(&ks, "i", HS_TYPE_INT32, 1);
    for (int k = 0; k < n; k++)
        add_field(&ks, words[k], HS_TYPE_INT32, k + 2);
    hs_batch *kb = NULL;
    REQUIRE(hs_batch_create(&ks, NROWS, &kb, NULL) == HS_OK);
    for (int c = 0; c < kb->n_cols; c++)
        for (int64_t r = 0; r < NROWS; r++) {
            int32_t v = (int32_t)((r * (c + 3)) % 7) - 3;
            REQUIRE((r % 5 == 4 && c % 2 ? hs_col_append_null(kb->cols[c])
                                         : hs_col_append_fixed(kb->cols[c], &v)) == HS_OK);
        }
    kb->n_rows = NROWS;
    hs_field saved = g_schema;
    hs_batch *saved_b = g_batch;
    g_schema = ks;
    g_batch = kb;
    static const char *const FORMS[] = {
        "%s = 1", "%s IS NULL", "%s IN (1, 2)", "%s BETWEEN 1 AND 2", "1 < %s", "NOT %s = 1",
        "(%s) = 1", "%s NOT IN (1)", "%s NOT BETWEEN SYMMETRIC 2 AND 1", "i BETWEEN %s AND 2",
        "i IN (%s, 2)", "%s IS NOT NULL AND i > 0", "i = 1 OR %s < 2", "\"%s\" = 1",
    };
    int usable = 0, taken = 0;
    for (int k = 0; k < n; k++) {
        char text[256];
        snprintf(text, sizeof text, "%.63s = 1", words[k]);
        ex_expr *e = NULL;
        bool slow_ok = ex_parse_filter(text, &g_schema, &e, NULL) == HS_OK;
        ex_free(e);
        bool fast_ok = check_text(text);
        usable += slow_ok;
        taken += fast_ok;
        if (slow_ok != fast_ok)
            fprintf(stderr, "keyword column %s: libpg_query %s, the fast parser %s\n", words[k],
                    slow_ok ? "binds it" : "refuses it", fast_ok ? "takes it" : "declines");
        CHECK(slow_ok == fast_ok);
        for (size_t f = 0; f < sizeof FORMS / sizeof FORMS[0]; f++) {
            char t2[256];
            snprintf(t2, sizeof t2, FORMS[f], words[k]);
            check_text(t2);
        }
        /* what ex_format prints for the column parses again (a reserved or
         * type_func_name name quoted) */
        snprintf(text, sizeof text, "\"%.63s\" = 1", words[k]);
        char *fmt = NULL, *fmt2 = NULL;
        ex_expr *q = NULL, *again = NULL;
        bool round = ex_parse_filter(text, &g_schema, &q, NULL) == HS_OK &&
                     ex_format(q, &fmt, NULL) == HS_OK &&
                     ex_parse_filter(fmt, &g_schema, &again, NULL) == HS_OK &&
                     ex_format(again, &fmt2, NULL) == HS_OK && !strcmp(fmt, fmt2);
        if (!round)
            fprintf(stderr, "keyword column %s: formatted as [%s], which does not parse back\n",
                    words[k], fmt ? fmt : "");
        CHECK(round);
        hs_free(fmt);
        hs_free(fmt2);
        ex_free(q);
        ex_free(again);
        /* upper case folds */
        char up[64];
        size_t L = strlen(words[k]);
        for (size_t i = 0; i <= L; i++)
            up[i] = (char)toupper((unsigned char)words[k][i]);
        snprintf(text, sizeof text, "%.63s >= 0", up);
        check_text(text);
    }
    fprintf(stderr, "keywords: %d words, %d usable as column names, the fast parser takes %d\n", n,
            usable, taken);
    CHECK(usable > 350);
    g_schema = saved;
    g_batch = saved_b;
    hs_batch_free(kb);
    hs_field_clear(&ks);
}

int main(void)
{
    make_schema(&g_schema);
    g_batch = make_batch(&g_schema);
    HS_RUN(test_hand_cases);
    HS_RUN(test_generated_corpus);
    HS_RUN(test_every_keyword);
    HS_RUN(test_no_leaks);
    hs_batch_free(g_batch);
    hs_field_clear(&g_schema);
    return hs_test_summary();
}
