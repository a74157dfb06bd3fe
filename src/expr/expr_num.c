/*
 * expr/expr_num.c - numbers of the expression engine: exact decimal
 * arithmetic on __int128 unscaled values and PostgreSQL 15's numeric
 * functions.
 *
 *   what                          here
 *   ----------------------------  -----------------------------------------------
 *   powers of ten                 ex_pow10_tab (ex_pow10, ex_dec_up, ex_dec_round,
 *                                 ex_dec_fits and ex_dec_cmp are inlines of expr_int.h:
 *                                 every decimal kernel of expr_eval.c calls them)
 *   decimal <-> text, double      ex_dec_format, ex_dec_to_double
 *   numeric division              ex_div_scale (PostgreSQL's select_div_scale),
 *                                 ex_dec_div (rounded half away from zero, or trunc)
 *   numeric exp / ln / log10      numeric_math (PostgreSQL's result scale)
 *   the numeric functions         ex_num_fn: abs, round, floor, ceil, sqrt, sign,
 *                                 trunc, exp..radians (EX_FN_MATH), power, log(b, x),
 *                                 atan2, div, to_char(number, fmt)
 *
 * Decimals are PostgreSQL's numeric limited to 38 digits: an operation whose
 * exact result needs more is an error (22003), never a rounded value.  Float
 * functions follow PostgreSQL's float8 functions, errors included.
 * ex_num_fn is called by expr_eval.c once per row whose arguments are all
 * non-null; the templates of to_char are expr_sqlfn.c's.
 */
#include "expr/expr_int.h"

#include "base/numfmt.h"

#include <math.h>
#include <string.h>

#define P19_ ((__int128)10000000000000000000ULL)
const __int128 ex_pow10_tab[39] = {
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
    10000000000LL, 100000000000LL, 1000000000000LL, 10000000000000LL, 100000000000000LL,
    1000000000000000LL, 10000000000000000LL, 100000000000000000LL, 1000000000000000000LL,
    P19_, P19_ * 10, P19_ * 100, P19_ * 1000, P19_ * 10000, P19_ * 100000, P19_ * 1000000,
    P19_ * 10000000, P19_ * 100000000, P19_ * 1000000000, P19_ * 10000000000LL,
    P19_ * 100000000000LL, P19_ * 1000000000000LL, P19_ * 10000000000000LL,
    P19_ * 100000000000000LL, P19_ * 1000000000000000LL, P19_ * 10000000000000000LL,
    P19_ * 100000000000000000LL, P19_ * 1000000000000000000LL, P19_ * P19_};
#undef P19_

double ex_pow10_f(int k)
{
    static const double t[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
                               1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (k >= 0 && k <= 22)
        return t[k];
    return pow(10.0, k);
}

/* floor or ceil of v / 10^k (k >= 0). */
__int128 ex_dec_floor(__int128 v, int k, bool ceil_)
{
    if (k <= 0)
        return v;
    __int128 p = k > 38 ? ex_pow10(38) : ex_pow10(k), q = v / p, r = v % p;
    if (!ceil_ && r < 0)
        q--;
    if (ceil_ && r > 0)
        q++;
    return q;
}

int ex_dec_format(__int128 v, int scale, char *buf)
{
    char tmp[48];
    int k = 0;
    unsigned __int128 u = v < 0 ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    do {
        tmp[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (k <= scale)
        tmp[k++] = '0';
    int n = 0;
    if (v < 0)
        buf[n++] = '-';
    for (int i = k - 1; i >= 0; i--) {
        buf[n++] = tmp[i];
        if (i == scale && scale > 0)
            buf[n++] = '.';
    }
    buf[n] = '\0';
    return n;
}

/* The double nearest to d / 10^scale (correctly rounded: exact operands
 * and one division when they fit in a double's 53 bits, else the decimal
 * text through strtod), so 150000000000000000000 at scale 20 is 1.5. */
double ex_dec_to_double(__int128 d, int scale)
{
    const __int128 lim = (__int128)1 << 53;
    if (d < lim && d > -lim && scale <= 22)
        return (double)d / ex_pow10_f(scale);
    char buf[64];
    ex_dec_format(d, scale, buf);
    return hs_strtod(buf, NULL);
}

/* ------------------------------------------------------------------ */
/* numeric functions                                                   */

/* PostgreSQL's float errors (SQLSTATEs from the session's message table) */
static hs_status math_check(ex_ctx *c, const ex_node *n, double x, double r)
{
    if (isinf(r) && !isinf(x))
        return ex_fail(c, n, "value out of range: overflow");
    if (r == 0 && x != 0 && n->aux == EX_M_EXP)
        return ex_fail(c, n, "value out of range: underflow");
    return HS_OK;
}

/* PostgreSQL's estimate_ln_dweight: the decimal weight of ln(x), x =
 * v / 10^s > 0. */
static int ln_dweight(__int128 v, int s)
{
    __int128 one = ex_pow10(s);
    if (v * 10 >= one * 9 && v * 10 <= one * 11) { /* 0.9 <= x <= 1.1: ln(x) ~ x - 1 */
        __int128 d = v - one;
        if (d == 0)
            return 0;
        if (d < 0)
            d = -d;
        int nd = 0;
        for (; d > 0; d /= 10)
            nd++;
        return nd - 1 - s;
    }
    double l = log(ex_dec_to_double(v, s));
    return l == 0 ? 0 : (int)log10(fabs(l));
}

/* exp, ln, log10 (log) of a numeric as PostgreSQL's numeric_exp/_ln/_log:
 * the result rounded half away from zero at PostgreSQL's scale (16
 * significant digits at least, the argument's scale at least), computed in
 * long double (about 19 digits: a value whose 17th to 19th digits sit at a
 * rounding tie can differ in its last digit), then held at the column's
 * scale (22003 when digits would be lost). */
static hs_status at_type_scale(ex_ctx *c, const ex_node *n, __int128 q, int rs, __int128 *out);

static hs_status numeric_math(ex_ctx *c, const ex_node *n, __int128 v, int s, __int128 *out)
{
    long double x = (long double)v / (long double)ex_pow10(s), r;
    int rs;
    if (n->aux == EX_M_EXP) {
        double val = (double)x * 0.434294481903252;
        val = val > 1000 ? 1000 : val < -1000 ? -1000 : val;
        rs = 16 - (int)val;
        r = expl(x);
    } else {
        if (v == 0)
            return ex_fail(c, n, "cannot take logarithm of zero");
        if (v < 0)
            return ex_fail(c, n, "cannot take logarithm of a negative number");
        rs = 16 - ln_dweight(v, s);
        r = n->aux == EX_M_LN ? logl(x) : log10l(x);
    }
    if (rs < s)
        rs = s;
    if (rs < 0)
        rs = 0;
    if (rs > 38 || !isfinite((double)r))
        return ex_fail(c, n, "value out of range: the result needs more than 38 digits");
    long double m = r * powl(10.0L, (long double)rs);
    if (fabsl(m) >= 1e37L)
        return ex_fail(c, n, "numeric field overflow");
    return at_type_scale(c, n, (__int128)roundl(m), rs, out);
}

/* q (a value at scale rs) held at the scale of n's type: 22003 when digits
 * would be lost or it does not fit the precision. */
static hs_status at_type_scale(ex_ctx *c, const ex_node *n, __int128 q, int rs, __int128 *out)
{
    int S = n->type.scale;
    if (rs > S) {
        __int128 p = ex_pow10(rs - S);
        if (q % p != 0)
            return ex_fail(c, n, "value out of range: the result needs more than 38 digits at scale %d", S);
        q /= p;
    } else if (!ex_dec_up(q, S - rs, &q) || !ex_dec_fits(q)) {
        return ex_fail(c, n, "numeric field overflow");
    }
    if (n->type.prec < 38 && (q >= ex_pow10(n->type.prec) || q <= -ex_pow10(n->type.prec)))
        return ex_fail(c, n, "numeric field overflow");
    *out = q;
    return HS_OK;
}

/* PostgreSQL's select_div_scale: the display scale of numeric x / y, from the
 * weights and first digits of the operands in base 10000. */
static int ndigits_u128(unsigned __int128 u)
{
    int k = 1;
    while (k < 39 && u >= (unsigned __int128)ex_pow10_tab[k])
        k++;
    return k;
}

static void nbase_lead(__int128 v, int scale, int *weight, int *first)
{
    unsigned __int128 u = (unsigned __int128)(v < 0 ? -v : v);
    if (u == 0) {
        *weight = 0;
        *first = 0;
        return;
    }
    int nd = ndigits_u128(u);
    int e = nd - 1 - scale;                 /* decimal exponent of the leading digit */
    int w = e >= 0 ? e / 4 : -((-e + 3) / 4); /* floor(e / 4) */
    int k = e - 4 * w + 1;                  /* decimal digits of the first base-10000 digit */
    *weight = w;
    *first = nd >= k ? (int)(u / (unsigned __int128)ex_pow10_tab[nd - k])
                     : (int)(u * (unsigned __int128)ex_pow10_tab[k - nd]);
}

int ex_div_scale(__int128 x, int sx, __int128 y, int sy)
{
    int w1, f1, w2, f2;
    nbase_lead(x, sx, &w1, &f1);
    nbase_lead(y, sy, &w2, &f2);
    int qw = w1 - w2 - (f1 <= f2 ? 1 : 0);
    int r = 16 - qw * 4;
    if (r < sx)
        r = sx;
    if (r < sy)
        r = sy;
    return r < 0 ? 0 : r > 1000 ? 1000 : r;
}

/* x / y as numeric: rounded half away from zero at PostgreSQL's scale
 * (ex_div_scale), then given at scale sr.  0: ok; 1: division by zero; 2:
 * the result needs more than 38 digits at scale sr (the exact range). */
static int dec_div_rs(__int128 x, int sx, __int128 y, int sy, int rs, int sr, bool trunc_,
                      __int128 *out);

int ex_dec_div(__int128 x, int sx, __int128 y, int sy, int sr, bool trunc_, __int128 *out)
{
    if (y == 0)
        return 1;
    if (x == 0) {
        *out = 0;
        return 0;
    }
    return dec_div_rs(x, sx, y, sy, trunc_ ? 0 : ex_div_scale(x, sx, y, sy), sr, trunc_, out);
}

int ex_dec_div_round(__int128 x, int sx, __int128 y, int sy, int sr, __int128 *out)
{
    if (y == 0)
        return 1;
    if (x == 0) {
        *out = 0;
        return 0;
    }
    int rs = ex_div_scale(x, sx, y, sy);
    if (rs <= sr)
        return dec_div_rs(x, sx, y, sy, rs, sr, false, out);
    __int128 q;
    int rc = dec_div_rs(x, sx, y, sy, rs, rs, false, &q);   /* the quotient PostgreSQL gives */
    if (rc != 0)
        return rc;
    if (rs - sr > 38) {
        *out = 0;
        return 0;
    }
    unsigned __int128 u = (unsigned __int128)(q < 0 ? -q : q), p = (unsigned __int128)ex_pow10_tab[rs - sr];
    u = u / p + (u % p >= p - u % p ? 1 : 0);   /* half away from zero */
    *out = q < 0 ? -(__int128)u : (__int128)u;
    return 0;
}

/* ex_dec_div rounded at scale rs (>= sx) instead of PostgreSQL's division
 * scale; x and y are not zero. */
static int dec_div_rs(__int128 x, int sx, __int128 y, int sy, int rs, int sr, bool trunc_,
                      __int128 *out)
{
    bool negr = (x < 0) != (y < 0);
    unsigned __int128 X = (unsigned __int128)(x < 0 ? -x : x), Y = (unsigned __int128)(y < 0 ? -y : y);
    /* quotient digits: X * 10^(rs + sy - sx) / Y; rs >= sx so the exponent is >= sy >= 0 */
    int E = rs + sy - sx;
    if (E < 0) { /* trunc_ with sx > sy: divide the divisor's scale out instead */
        if (-E > 38)
            return 2;
        unsigned __int128 p = (unsigned __int128)ex_pow10_tab[-E];
        if (Y > ((unsigned __int128)1 << 127) / p)
            { *out = 0; return 0; }
        Y *= p;
        E = 0;
    }
    unsigned __int128 q = X / Y, r = X % Y;
    int dy = ndigits_u128(Y), chunk = 38 - dy;
    const unsigned __int128 LIM = (unsigned __int128)ex_pow10_tab[38];
    while (E > 0) {
        int k = E < chunk ? E : chunk;
        if (k <= 0) { /* a divisor of 38 digits: one digit at a time would overflow */
            if (r > ((unsigned __int128)-1) / 10)
                return 2;
            k = 1;
        }
        unsigned __int128 p = (unsigned __int128)ex_pow10_tab[k];
        if (q > LIM / p)
            return 2;
        r *= p;
        q = q * p + r / Y;
        r %= Y;
        E -= k;
    }
    if (!trunc_ && r >= Y - r) /* 2r >= Y: half away from zero */
        q++;
    if (q >= LIM)
        return 2;
    if (rs < sr) {
        unsigned __int128 p = (unsigned __int128)ex_pow10_tab[sr - rs];
        if (q > (LIM - 1) / p)
            return 2;
        q *= p;
    } else if (rs > sr) {
        if (rs - sr > 38)
            return q == 0 ? (*out = 0, 0) : 2;
        unsigned __int128 p = (unsigned __int128)ex_pow10_tab[rs - sr];
        if (q % p)
            return 2;
        q /= p;
    }
    *out = negr ? -(__int128)q : (__int128)q;
    return 0;
}

/* ---- power(numeric, numeric) ----
 * PostgreSQL's numeric_power / power_var.  The result scale: for an
 * exponent that is an integer of int32's range, max(16, the base's scale);
 * otherwise 16 less the decimal weight of the result (estimated from
 * y * ln(x)), at least the scales of both arguments.  An integer exponent is
 * computed exactly (|X|^e of the unscaled base in 128 bits, or 10^k / |X|^-e)
 * and rounded half away from zero at that scale, as PostgreSQL's
 * power_var_int gives it; other exponents in long double (powl), accepted
 * only where the result has at most 18 significant digits (0A000 beyond:
 * long double does not hold more).  Results need at most 38 digits (22003). */

/* Strips trailing zeros of the unscaled value (2.50 -> 2.5). */
static void dec_normalize(__int128 *v, int *s)
{
    while (*s > 0 && *v != 0 && *v % 10 == 0) {
        *v /= 10;
        (*s)--;
    }
}

/* y as an integer of int32's range, when it is one */
static bool dec_int32(__int128 y, int sy, int64_t *e)
{
    __int128 p = ex_pow10(sy);
    if (sy > 38 || y % p != 0)
        return false;
    __int128 q = y / p;
    if (q > INT32_MAX || q < INT32_MIN)
        return false;
    *e = (int64_t)q;
    return true;
}

/* The decimal weight of y * ln(x) (x > 0), as power_var's estimate. */
static double power_weight(__int128 x, int sx, __int128 y, int sy)
{
    return (double)(logl((long double)x / (long double)ex_pow10(sx)) *
                    ((long double)y / (long double)ex_pow10(sy))) * 0.434294481903252;
}

int ex_power_scale(__int128 x, int sx, __int128 y, int sy)
{
    int64_t e;
    int rs;
    if (dec_int32(y, sy, &e)) {
        rs = sx > 16 ? sx : 16;
    } else if (x == 0) {
        rs = 16;
    } else {
        double val = power_weight(x < 0 ? -x : x, sx, y, sy);
        if (val > 3100 || val < -3100)
            return 1000;
        rs = 16 - (int)val;
        rs = rs < sx ? sx : rs;
        rs = rs < sy ? sy : rs;
    }
    return rs < 0 ? 0 : rs > 1000 ? 1000 : rs;
}

static hs_status numeric_power(ex_ctx *c, const ex_node *n, __int128 x, int sx, __int128 y, int sy,
                               __int128 *out)
{
    if (x == 0 && y < 0)
        return ex_fail(c, n, "zero raised to a negative power is undefined");
    int64_t e = 0;
    bool is_int = dec_int32(y, sy, &e);
    __int128 p = ex_pow10(sy > 38 ? 38 : sy);
    if (x < 0 && y % p != 0)
        return ex_fail(c, n, "a negative number raised to a non-integer power yields a complex result");
    int rs = ex_power_scale(x, sx, y, sy);
    if (is_int && e == 0) /* 0 ^ 0 is 1 (PostgreSQL, as most languages) */
        return at_type_scale(c, n, ex_pow10(rs > 38 ? 38 : rs), rs > 38 ? 38 : rs, out);
    if (x == 0)
        return at_type_scale(c, n, 0, rs > 38 ? 38 : rs, out);
    dec_normalize(&x, &sx);
    bool neg = x < 0 && (is_int ? (e & 1) : ((y / p) & 1));
    unsigned __int128 ux = (unsigned __int128)(x < 0 ? -x : x);
    /* the result's decimal weight: 22003 past 38 digits, 0 below the scale */
    double w = power_weight((__int128)ux, sx, y, sy);
    if (w >= 38)
        return ex_fail(c, n, "value out of range: the result needs more than 38 digits");
    if (w + 1 < -rs)
        return at_type_scale(c, n, 0, rs > 38 ? 38 : rs, out);
    if (rs > 38)
        return ex_fail(c, n, "value out of range: the result needs more than 38 digits");
    if (is_int) {
        /* exactly: |X|^|e| in 128 bits (|X| = 1 stays 1; any other |X|
         * overflows within 127 steps, so the loop is short for any e) */
        unsigned __int128 pw = 1;
        bool fits = true;
        for (int64_t k = 0; k < (e < 0 ? -e : e) && fits && ux != 1; k++)
            fits = !__builtin_mul_overflow(pw, ux, &pw) && pw <= (unsigned __int128)EX_DEC_MAX;
        int ps = sx * (int)(e < 0 ? -e : e);
        if (fits && ps <= 1000) {
            __int128 q;
            if (e > 0) {
                if (ps > rs)
                    q = ex_dec_round((__int128)pw, ps - rs);
                else if (!ex_dec_up((__int128)pw, rs - ps, &q))
                    return ex_fail(c, n, "value out of range: the result needs more than 38 digits");
            } else if (dec_div_rs(1, 0, (__int128)pw, ps, rs, rs, false, &q) != 0) {
                return ex_fail(c, n, "value out of range: the result needs more than 38 digits");
            }
            return at_type_scale(c, n, neg ? -q : q, rs, out);
        }
    }
    /* in long double: at most 18 significant digits */
    int sig = rs + (int)floor(w) + 1;
    if (sig > 18)
        return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc,
                         "power(numeric, numeric): a result of %d significant digits is not supported "
                         "(at most 18 for this exponent)", sig);
    long double r = powl((long double)ux / (long double)ex_pow10(sx), (long double)y / (long double)p);
    long double m = r * powl(10.0L, (long double)rs);
    if (!isfinite((double)m) || fabsl(m) >= 1e37L)
        return ex_fail(c, n, "value out of range: the result needs more than 38 digits");
    __int128 q = (__int128)roundl(m);
    return at_type_scale(c, n, neg ? -q : q, rs, out);
}

/* to_char(number, fmt): the value as sign, integer and fraction digits
 * rounded to the template's fraction (expr_sqlfn.c formats them). */
static hs_status to_char_num(ex_ctx *c, const ex_node *n, const ex_ty *t, const ex_vec *a, int j,
                             const ex_str *fmt, ex_str *out)
{
    char msg[256], ip[420], fp[128];
    int nf = ex_to_char_frac_digits(fmt, msg);
    if (nf < 0)
        return ex_err_at(c->err, nf == -1 ? HS_UNSUPPORTED : HS_INVALID, c->e->text, n->loc, "%s", msg);
    if (nf > 100)
        return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc,
                         "to_char: more than 100 fraction digits are not supported");
    bool neg = false;
    int float_post = -1;
    memset(fp, '0', (size_t)nf);
    fp[nf] = 0;
    if (t->t == EX_T_FLOAT) {
        double x = a->v.f[j];
        if (!isfinite(x))
            return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc,
                             "to_char of NaN or infinity is not supported");
        char tmp[520];
        int pre = hs_snprintf_c(tmp, sizeof tmp, "%.0f", fabs(x));
        float_post = pre >= 15 ? 0 : nf < 15 - pre ? nf : 15 - pre;
        hs_snprintf_c(tmp, sizeof tmp, "%.*f", float_post, x);
        const char *q = tmp;
        if (*q == '-') {
            neg = true;
            q++;
        }
        while (*q == '0')
            q++;
        size_t k = 0;
        while (*q && *q != '.' && k < sizeof ip - 1)
            ip[k++] = *q++;
        ip[k] = 0;
        if (*q == '.')
            memcpy(fp, q + 1, (size_t)float_post);
    } else {
        unsigned __int128 u;
        int s = 0;
        if (t->t == EX_T_INT) {
            int64_t v = a->v.i[j];
            neg = v < 0;
            u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
        } else {
            __int128 d = a->v.d[j];
            s = t->scale;
            if (nf < s) {
                d = ex_dec_round(d, s - nf);
                s = nf;
            }
            neg = d < 0;
            u = (unsigned __int128)(neg ? -d : d);
        }
        /* digits of u, the last s of them the fraction */
        char dg[48];
        int nd = 0;
        do {
            dg[nd++] = (char)('0' + (int)(u % 10));
            u /= 10;
        } while (u);
        while (nd <= s)
            dg[nd++] = '0';
        size_t k = 0;
        for (int i = nd - 1; i >= s; i--)
            ip[k++] = dg[i];
        ip[k] = 0;
        if (k == 1 && ip[0] == '0')
            ip[0] = 0;
        for (int i = 0; i < s; i++)
            fp[i] = dg[s - 1 - i];
    }
    hs_status st = ex_to_char_num(c->arena, neg, ip, fp, fmt, float_post, out);
    return st == HS_NOMEM ? hs_err_nomem(c->err, fmt->n) : st;
}

/* 256-bit unsigned integers, enough for the square root below: a value of
 * 38 digits scaled by up to 10^38. */
typedef struct u256 {
    unsigned __int128 hi, lo;
} u256;

static u256 u256_mul(unsigned __int128 a, unsigned __int128 b)
{
    uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64), b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
    unsigned __int128 p00 = (unsigned __int128)a0 * b0, p01 = (unsigned __int128)a0 * b1;
    unsigned __int128 p10 = (unsigned __int128)a1 * b0, p11 = (unsigned __int128)a1 * b1;
    unsigned __int128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10;
    u256 r;
    r.lo = (mid << 64) | (uint64_t)p00;
    r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    return r;
}

static bool u256_ge(u256 a, u256 b) { return a.hi != b.hi ? a.hi > b.hi : a.lo >= b.lo; }

static u256 u256_add(u256 a, u256 b)
{
    u256 r = {a.hi + b.hi, a.lo + b.lo};
    r.hi += r.lo < a.lo;
    return r;
}

static u256 u256_sub(u256 a, u256 b)
{
    u256 r = {a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo};
    return r;
}

static u256 u256_shr(u256 a, int k)   /* 0 < k < 128 */
{
    u256 r = {a.hi >> k, (a.lo >> k) | (a.hi << (128 - k))};
    return r;
}

/* floor(sqrt(x)) and x - floor(sqrt(x))^2, bit by bit. */
static unsigned __int128 u256_isqrt(u256 x, u256 *rem)
{
    u256 res = {0, 0}, bit = {(unsigned __int128)1 << 126, 0};   /* 4^127 */
    while (!u256_ge(x, bit) && (bit.hi || bit.lo))
        bit = u256_shr(bit, 2);
    while (bit.hi || bit.lo) {
        u256 t = u256_add(res, bit);
        if (u256_ge(x, t)) {
            x = u256_sub(x, t);
            res = u256_add(u256_shr(res, 1), bit);
        } else {
            res = u256_shr(res, 1);
        }
        bit = u256_shr(bit, 2);
    }
    *rem = x;
    return res.lo;
}

/* x / y with remainder (y != 0), bit by bit. */
static u256 u256_divmod(u256 x, unsigned __int128 y, unsigned __int128 *rem)
{
    u256 q = {0, 0};
    unsigned __int128 r = 0;
    for (int i = 255; i >= 0; i--) {
        bool top = r >> 127;
        r = (r << 1) | (unsigned __int128)((i >= 128 ? x.hi >> (i - 128) : x.lo >> i) & 1);
        if (top || r >= y) {
            r -= y;
            if (i >= 128)
                q.hi |= (unsigned __int128)1 << (i - 128);
            else
                q.lo |= (unsigned __int128)1 << i;
        }
    }
    *rem = r;
    return q;
}

/* Decimal digits of x (> 0) and its leading base-10000 digit at scale sc:
 * PostgreSQL's weight and first digit (as nbase_lead above). */
static void u256_lead(u256 x, int sc, int *weight, int *first)
{
    char buf[100];
    int n = 0;
    while ((x.hi || x.lo) && n < 99) {
        unsigned __int128 r;
        x = u256_divmod(x, 10, &r);
        buf[n++] = (char)('0' + (int)r);
    }
    int e = n - 1 - sc;
    int w = e >= 0 ? e / 4 : -((-e + 3) / 4);
    int k = e - 4 * w + 1, f = 0;
    for (int i = 0; i < k; i++)
        f = f * 10 + (n - 1 - i >= 0 ? buf[n - 1 - i] - '0' : 0);
    *weight = w;
    *first = f;
}

/* PostgreSQL's numeric var_samp/var_pop/stddev_samp/stddev_pop
 * (numeric_stddev_internal) from N = count, S = sum(x) at scale ss, Q =
 * sum(x * x) at scale sq: num = N * Q - S * S exactly (256 bits), den =
 * N * (N - 1) (N * N for _pop); NULL for N = 0 (N <= 1 sample), 0 when
 * num <= 0, else num / den rounded at select_div_scale, stddev its square
 * root rounded at the same scale (sqrt_var).  The column holds one scale
 * (n's type): where PostgreSQL's scale is larger (a variance below 1, or
 * of numerics of large scale) the value is rounded there, half away from
 * zero; an integer part that does not fit is 22003. */
static hs_status numeric_stddev(ex_ctx *c, const ex_node *n, const ex_vec *a, int j, ex_vec *out)
{
    bool root = n->aux & 1, sample = n->aux & 2;
    __int128 N = a[0].v.d[j], S = a[1].v.d[j], Q = a[2].v.d[j];
    int ss = n->args[1]->type.scale, sq = n->args[2]->type.scale;
    if (N <= (sample ? 1 : 0)) {
        out->nul[j] = true;
        return HS_OK;
    }
    /* S and Q at one scale 2 * ss (PostgreSQL's product scale) */
    int s2 = 2 * ss;
    if (sq < s2 && !ex_dec_up(Q, s2 - sq, &Q))
        return ex_fail(c, n, "value out of range: the sum of squares has more than 38 digits");
    if (sq > s2)
        Q = ex_dec_round(Q, sq - s2);   /* not reached: Q's scale is 2 * ss */
    unsigned __int128 uS = (unsigned __int128)(S < 0 ? -S : S);
    u256 nq = u256_mul((unsigned __int128)N, (unsigned __int128)Q), ss2 = u256_mul(uS, uS);
    if (Q < 0 || !u256_ge(nq, ss2) || (nq.hi == ss2.hi && nq.lo == ss2.lo)) {
        out->v.d[j] = 0;
        return HS_OK;
    }
    u256 num = u256_sub(nq, ss2);
    unsigned __int128 den = (unsigned __int128)N * (unsigned __int128)(sample ? N - 1 : N);
    /* select_div_scale(num at scale s2, den at scale 0) */
    int w1, f1, w2, f2;
    u256_lead(num, s2, &w1, &f1);
    nbase_lead((__int128)den, 0, &w2, &f2);
    int rs = 16 - (w1 - w2 - (f1 <= f2 ? 1 : 0)) * 4;
    if (rs < s2)
        rs = s2;
    /* the variance num / (den * 10^s2) at scale rc = min(rs, 38), or at
     * the column's scale when it needs more than 38 digits there:
     * round(num * 10^(rc - s2) / den), the integer part then the fraction
     * from the remainder (rem * 10^(rc - s2) < 2^253) */
    int S_col = n->type.scale, rc = rs > 38 ? 38 : rs;
    unsigned __int128 rem, lim = (unsigned __int128)ex_pow10(38);
    u256 qi = u256_divmod(num, den, &rem);
    __int128 v = 0;
    for (;;) {
        int E = rc - s2;
        unsigned __int128 P = (unsigned __int128)ex_pow10(E), rem2;
        u256 qf = u256_divmod(u256_mul(rem, P), den, &rem2);
        if (rem2 >= den - rem2)
            qf = u256_add(qf, (u256){0, 1});   /* half away from zero */
        if (!qi.hi && !qf.hi && qi.lo <= (lim - 1 - qf.lo) / P) {
            v = (__int128)(qi.lo * P + qf.lo);
            break;
        }
        if (rc <= S_col || rc <= s2)
            return ex_fail(c, n, "numeric field overflow");
        rc = S_col > s2 ? S_col : s2;
    }
    if (root) {
        /* sqrt(v / 10^rc) at scale rc = sqrt(v * 10^rc) */
        u256 rm;
        unsigned __int128 r = u256_isqrt(u256_mul((unsigned __int128)v, (unsigned __int128)ex_pow10(rc)), &rm);
        if (rm.hi || rm.lo > r)
            r++;   /* rounded half up: the true root is at or past r + 1/2 */
        v = (__int128)r;
    }
    int r2 = rc < S_col ? rc : S_col;
    if (rc > r2)
        v = ex_dec_round(v, rc - r2);
    return at_type_scale(c, n, v, r2, &out->v.d[j]);
}

/* Row j of the numeric function n (abs, round, floor, ceil, sqrt, sign,
 * trunc, the EX_FN_MATH functions, power, log(b, x), atan2, div, to_char of
 * a number) into out; its arguments a[] are not null at j. */
hs_status ex_num_fn(ex_ctx *c, const ex_node *n, const ex_vec *a, int j, ex_vec *out)
{
    ex_fn fn = (ex_fn)n->op;
    const ex_ty *t0 = &n->args[0]->type;
    hs_status st = HS_OK;
    switch (fn) {
    case EX_FN_ABS:
        if (t0->t == EX_T_INT) {
            if (a[0].v.i[j] == INT64_MIN)
                return ex_fail(c, n, "integer out of range");
            out->v.i[j] = a[0].v.i[j] < 0 ? -a[0].v.i[j] : a[0].v.i[j];
        } else if (t0->t == EX_T_DEC) {
            out->v.d[j] = a[0].v.d[j] < 0 ? -a[0].v.d[j] : a[0].v.d[j];
        } else {
            out->v.f[j] = fabs(a[0].v.f[j]);
        }
        break;
    case EX_FN_ROUND:
        if (t0->t == EX_T_FLOAT) {
            double x = a[0].v.f[j], r;
            if (n->aux == 0 && !n->neg) {
                r = nearbyint(x); /* PostgreSQL's rint: half to even */
            } else if (n->aux == 0) {
                r = round(x);
            } else if (n->aux > 0) {
                double m = ex_pow10_f(n->aux);
                r = round(x * m) / m;
            } else {
                double m = ex_pow10_f(-n->aux);
                r = round(x / m) * m;
            }
            out->v.f[j] = isfinite(r) ? r : x;
        } else if (t0->t == EX_T_DEC) {
            __int128 v = a[0].v.d[j];
            int s = t0->scale, rs = n->type.scale;
            v = ex_dec_round(v, s - rs);
            if (rs > s && (!ex_dec_up(v, rs - s, &v) || !ex_dec_fits(v)))
                return ex_fail(c, n, "numeric field overflow");
            if (n->aux < 0) {
                v = ex_dec_round(v, -n->aux);
                if (!ex_dec_up(v, -n->aux, &v) || !ex_dec_fits(v))
                    return ex_fail(c, n, "numeric field overflow");
            }
            out->v.d[j] = v;
        } else {
            int64_t v = a[0].v.i[j];
            if (n->aux < 0) {
                if (n->aux < -18) {
                    v = 0;
                } else {
                    int64_t p = (int64_t)ex_pow10(-n->aux), q = v / p, r = v % p;
                    if ((r < 0 ? -r : r) * 2 >= p)
                        q += v < 0 ? -1 : 1;
                    if (__builtin_mul_overflow(q, p, &v))
                        return ex_fail(c, n, "integer out of range");
                }
            }
            out->v.i[j] = v;
        }
        break;
    case EX_FN_FLOOR: case EX_FN_CEIL:
        if (t0->t == EX_T_DEC)
            out->v.d[j] = ex_dec_floor(a[0].v.d[j], t0->scale, fn == EX_FN_CEIL);
        else
            out->v.f[j] = fn == EX_FN_CEIL ? ceil(a[0].v.f[j]) : floor(a[0].v.f[j]);
        break;
    case EX_FN_SQRT:
        out->v.f[j] = sqrt(a[0].v.f[j]);
        break;
    case EX_FN_SIGN:
        if (t0->t == EX_T_DEC) {
            out->v.d[j] = a[0].v.d[j] > 0 ? 1 : a[0].v.d[j] < 0 ? -1 : 0;
        } else {
            double x = a[0].v.f[j];
            out->v.f[j] = x > 0 ? 1.0 : x < 0 ? -1.0 : isnan(x) ? x : 0.0;
        }
        break;
    case EX_FN_TRUNC:
        if (t0->t == EX_T_FLOAT) {
            out->v.f[j] = trunc(a[0].v.f[j]);
        } else {
            __int128 v = a[0].v.d[j];
            int s = t0->scale, rs = n->type.scale, keep = n->aux;
            if (keep < s) { /* drop the digits after `keep` (toward zero) */
                int drop = s - keep;
                __int128 p = ex_pow10(drop > 38 ? 38 : drop);
                v = drop > 38 ? 0 : v / p;
                if (keep < 0 && !ex_dec_up(v, -keep, &v))
                    st = ex_fail(c, n, "numeric field overflow");
                s = keep < 0 ? 0 : keep;
            }
            if (st == HS_OK && rs > s && (!ex_dec_up(v, rs - s, &v) || !ex_dec_fits(v)))
                st = ex_fail(c, n, "numeric field overflow");
            out->v.d[j] = v;
        }
        break;
    case EX_FN_MATH: {
        if (t0->t == EX_T_DEC) {
            st = numeric_math(c, n, a[0].v.d[j], t0->scale, &out->v.d[j]);
            break;
        }
        double x = a[0].v.f[j], r = 0;
        switch ((ex_math)n->aux) {
        case EX_M_EXP: r = exp(x); break;
        case EX_M_LN: case EX_M_LOG10:
            if (x == 0)
                return ex_fail(c, n, "cannot take logarithm of zero");
            if (x < 0)
                return ex_fail(c, n, "cannot take logarithm of a negative number");
            r = n->aux == EX_M_LN ? log(x) : log10(x);
            break;
        case EX_M_CBRT: r = cbrt(x); break;
        case EX_M_SIN: r = sin(x); break;
        case EX_M_COS: r = cos(x); break;
        case EX_M_TAN: r = tan(x); break;
        case EX_M_ASIN: case EX_M_ACOS:
            if (x < -1 || x > 1)
                return ex_fail(c, n, "input is out of range");
            r = n->aux == EX_M_ASIN ? asin(x) : acos(x);
            break;
        case EX_M_ATAN: r = atan(x); break;
        case EX_M_DEGREES: r = x * (180.0 / 3.14159265358979323846); break;
        case EX_M_RADIANS: r = x * (3.14159265358979323846 / 180.0); break;
        }
        if ((n->aux == EX_M_SIN || n->aux == EX_M_COS || n->aux == EX_M_TAN) && isinf(x))
            return ex_fail(c, n, "input is out of range");
        HS_TRY(math_check(c, n, x, r));
        out->v.f[j] = r;
        break;
    }
    case EX_FN_POWER: {
        if (t0->t == EX_T_DEC)
            return numeric_power(c, n, a[0].v.d[j], t0->scale, a[1].v.d[j], n->args[1]->type.scale,
                                 &out->v.d[j]);
        double x = a[0].v.f[j], y = a[1].v.f[j];
        if (x == 0 && y < 0)
            return ex_fail(c, n, "zero raised to a negative power is undefined");
        if (x < 0 && floor(y) != y && isfinite(y))
            return ex_fail(c, n, "a negative number raised to a non-integer power yields a complex result");
        double r = pow(x, y);
        if (isinf(r) && isfinite(x) && isfinite(y))
            return ex_fail(c, n, "value out of range: overflow");
        if (r == 0 && x != 0 && isfinite(x) && isfinite(y))
            return ex_fail(c, n, "value out of range: underflow");
        out->v.f[j] = r;
        break;
    }
    case EX_FN_LOG2: { /* log(b, x) */
        double bb = a[0].v.f[j], x = a[1].v.f[j];
        if (bb == 0 || x == 0)
            return ex_fail(c, n, "cannot take logarithm of zero");
        if (bb < 0 || x < 0)
            return ex_fail(c, n, "cannot take logarithm of a negative number");
        if (bb == 1)
            return ex_fail(c, n, "division by zero");
        out->v.f[j] = log(x) / log(bb);
        break;
    }
    case EX_FN_ATAN2:
        out->v.f[j] = atan2(a[0].v.f[j], a[1].v.f[j]);
        break;
    case EX_FN_DIV: {
        int rc2 = ex_dec_div(a[0].v.d[j], n->args[0]->type.scale, a[1].v.d[j],
                          n->args[1]->type.scale, 0, true, &out->v.d[j]);
        if (rc2 == 1)
            return ex_fail(c, n, "division by zero");
        if (rc2 == 2)
            return ex_fail(c, n, "value out of range: the quotient has more than 38 digits");
        break;
    }
    case EX_FN_NUM_STDDEV:
        return numeric_stddev(c, n, a, j, out);
    case EX_FN_TO_CHAR:
        return to_char_num(c, n, t0, &a[0], j, &a[1].v.s[j], &out->v.s[j]);
    default:
        return ex_fail(c, n, "internal: not a numeric function");
    }
    return st;
}
