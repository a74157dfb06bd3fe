/*
 * expr/expr_cast.c - casts between the expression types and text.
 *
 * Owns: parsing text into values (bool, integers with range checks,
 * decimals at a scale, dates, timestamps, uuids: PostgreSQL's input rules),
 * formatting values as text (ex_to_text, ex_value_text for constants in
 * formatted expressions), and the CAST kernel ex_cast_rows that ev_cast in
 * expr_eval.c calls for every row of a selection.  pgvector types cast
 * through expr_pgvector.c (ex_pv_cast_rows); intervals through
 * expr_interval.c.
 */
#include "expr/expr_int.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/jsonl.h"

#include "expr/pgvector.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void trim_span(const uint8_t **p, size_t *n)
{
    while (*n > 0 && isspace((*p)[0])) {
        (*p)++;
        (*n)--;
    }
    while (*n > 0 && isspace((*p)[*n - 1]))
        (*n)--;
}

static bool parse_bool_text(const uint8_t *p, size_t n, uint8_t *out)
{
    trim_span(&p, &n);
    static const char *const t[] = {"t", "true", "y", "yes", "on", "1"};
    static const char *const f[] = {"f", "false", "n", "no", "off", "0"};
    for (int i = 0; i < 6; i++) {
        if (strlen(t[i]) == n && strncasecmp((const char *)p, t[i], n) == 0) {
            *out = 1;
            return true;
        }
        if (strlen(f[i]) == n && strncasecmp((const char *)p, f[i], n) == 0) {
            *out = 0;
            return true;
        }
    }
    return false;
}

/* Integer text; 0 ok, 1 syntax, 2 range. */
static int parse_int_text(const uint8_t *p, size_t n, int64_t *out)
{
    trim_span(&p, &n);
    size_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        neg = p[i++] == '-';
    if (i >= n)
        return 1;
    uint64_t v = 0;
    bool over = false;
    for (; i < n; i++) {
        if (!isdigit(p[i]))
            return 1;
        if (v > (UINT64_MAX - 9) / 10)
            over = true;
        else
            v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (over || v > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
        return 2;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Decimal text at scale s, rounded half away from zero; 0 ok, 1 syntax, 2 range. */
static int parse_dec_text(const uint8_t *p, size_t n, int s, __int128 *out)
{
    trim_span(&p, &n);
    size_t i = 0;
    bool neg = false, any = false, dot = false;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        neg = p[i++] == '-';
    __int128 v = 0;
    int exp10 = 0, nd = 0;
    bool round_up = false, dropped = false;
    for (; i < n; i++) {
        uint8_t ch = p[i];
        if (ch == '.' && !dot) {
            dot = true;
            continue;
        }
        if (!isdigit(ch))
            break;
        any = true;
        if (nd >= 38) {
            /* digits beyond 38 significant: only their rounding matters */
            if (!dropped)
                round_up = ch >= '5';
            dropped = true;
            if (!dot)
                exp10++;
            continue;
        }
        if (v != 0 || ch != '0')
            nd++;
        v = v * 10 + (ch - '0');
        if (dot)
            exp10--;
    }
    if (!any)
        return 1;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (p[i] == '-' || p[i] == '+'))
            eneg = p[i++] == '-';
        int e = 0;
        if (i >= n)
            return 1;
        for (; i < n && isdigit(p[i]); i++)
            if (e < 10000)
                e = e * 10 + (p[i] - '0');
        exp10 += eneg ? -e : e;
    }
    if (i != n)
        return 1;
    if (round_up && exp10 + s < 0)
        round_up = false; /* rounding happens below instead */
    else if (round_up)
        v += 1;
    int shift = exp10 + s;
    if (shift >= 0) {
        if (shift > 76 || !ex_dec_up(v, shift, &v))
            return 2;
    } else {
        v = -shift > 76 ? 0 : ex_dec_round(v, -shift);
    }
    if (!ex_dec_fits(v))
        return 2;
    *out = neg ? -v : v;
    return 0;
}

static bool int_in_bits(int64_t v, int bits)
{
    switch (bits) {
    case 8: return v >= INT8_MIN && v <= INT8_MAX;
    case 16: return v >= INT16_MIN && v <= INT16_MAX;
    case 32: return v >= INT32_MIN && v <= INT32_MAX;
    default: return true;
    }
}

const char *ex_int_type_name(int bits)
{
    return bits == 16 ? "smallint" : bits == 32 ? "integer" : bits == 8 ? "tinyint" : "bigint";
}

hs_status ex_put_str(ex_ctx *c, ex_str *dst, const char *s, size_t n)
{
    uint8_t *p = hs_arena_alloc(c->arena, n ? n : 1);
    if (!p)
        return hs_err_nomem(c->err, n);
    memcpy(p, s, n);
    dst->p = p;
    dst->n = n;
    return HS_OK;
}

static int fmt_date(int64_t days, char *buf)
{
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(days, &y, &m, &d);
    if (y >= 0 && y <= 9999)
        return sprintf(buf, "%04lld-%02u-%02u", (long long)y, m, d);
    return sprintf(buf, "%s%04lld-%02u-%02u", y < 0 ? "-" : "+", (long long)(y < 0 ? -y : y), m, d);
}

/* "HH:MM:SS[.fraction without trailing zeros]" from a unit count within a day */
static int fmt_tod(int64_t v, int unit, char *buf)
{
    int64_t ups = ex_unit_per_sec(unit);
    int64_t secs = v / ups, frac = v % ups;
    int n = sprintf(buf, "%02lld:%02lld:%02lld", (long long)(secs / 3600), (long long)(secs / 60 % 60),
                    (long long)(secs % 60));
    if (frac) {
        int digits = unit == HS_UNIT_MILLI ? 3 : unit == HS_UNIT_MICRO ? 6 : 9;
        char f[24];
        snprintf(f, sizeof f, "%0*lld", digits, (long long)frac);
        int len = digits;
        while (len > 0 && f[len - 1] == '0')
            len--;
        n += sprintf(buf + n, ".%.*s", len, f);
    }
    return n;
}


/* Text form of row j of vector a (type t) into *dst. */
hs_status ex_to_text(ex_ctx *c, const ex_ty *t, const ex_vec *a, int j, ex_str *dst)
{
    char buf[96];
    int n = 0;
    if (ex_is_pvx(t->t))
        return ex_pv_text(c, t, &a->v.s[j], dst);
    switch (t->t) {
    case EX_T_STR: case EX_T_UNKNOWN:
        *dst = a->v.s[j];
        return HS_OK;
    case EX_T_BOOL:
        n = sprintf(buf, "%s", a->v.b[j] ? "true" : "false");
        break;
    case EX_T_INT:
        n = sprintf(buf, "%lld", (long long)a->v.i[j]);
        break;
    case EX_T_FLOAT: {
        double x = a->v.f[j];
        if (isnan(x))
            n = sprintf(buf, "NaN");
        else if (isinf(x))
            n = sprintf(buf, "%s", x < 0 ? "-Infinity" : "Infinity");
        else if (t->bits == 32)
            n = hs_fmt_float((float)x, buf);
        else
            n = hs_fmt_double(x, buf);
        break;
    }
    case EX_T_DEC:
        n = ex_dec_format(a->v.d[j], t->scale, buf);
        break;
    case EX_T_INTERVAL:
        n = (int)hs_interval_format(ex_iv_unpack(a->v.d[j]), buf, sizeof buf);
        break;
    case EX_T_DATE:
        n = fmt_date(a->v.i[j], buf);
        break;
    case EX_T_TS: {
        int64_t per_day = 86400 * ex_unit_per_sec(t->unit);
        int64_t v = a->v.i[j], days = ex_floor_div(v, per_day);
        n = fmt_date(days, buf);
        buf[n++] = ' ';
        n += fmt_tod(v - days * per_day, t->unit, buf + n);
        if (t->tz)
            n += sprintf(buf + n, "+00");
        break;
    }
    case EX_T_TIME:
        n = fmt_tod(a->v.i[j], t->unit, buf);
        break;
    case EX_T_BIN: {
        const ex_str *s = &a->v.s[j];
        if (t->uuid && s->n == 16) {
            for (int i = 0; i < 16; i++) {
                n += sprintf(buf + n, "%02x", s->p[i]);
                if (i == 3 || i == 5 || i == 7 || i == 9)
                    buf[n++] = '-';
            }
            break;
        }
        size_t len = 2 + 2 * s->n;
        uint8_t *p = hs_arena_alloc(c->arena, len);
        if (!p)
            return hs_err_nomem(c->err, len);
        p[0] = '\\';
        p[1] = 'x';
        for (size_t i = 0; i < s->n; i++) {
            static const char hx[] = "0123456789abcdef";
            p[2 + 2 * i] = (uint8_t)hx[s->p[i] >> 4];
            p[3 + 2 * i] = (uint8_t)hx[s->p[i] & 15];
        }
        dst->p = p;
        dst->n = len;
        return HS_OK;
    }
    default:
        n = 0;
        break;
    }
    return ex_put_str(c, dst, buf, (size_t)n);
}

hs_status ex_value_text(const ex_ty *t, const ex_value *v, hs_buf *out)
{
    hs_arena scratch = {0};
    ex_ctx c = {.arena = &scratch};
    ex_vec a;
    hs_status st = ex_vec_new(&c, t->t, &a);
    if (st == HS_OK) {
        switch (ex_elem_size(t->t)) {
        case 8:
            if (t->t == EX_T_FLOAT)
                a.v.f[0] = v->f;
            else
                a.v.i[0] = v->i;
            break;
        case 16:
            if (t->t == EX_T_DEC)
                a.v.d[0] = v->d;
            else
                a.v.s[0] = v->s;
            break;
        default: a.v.b[0] = (uint8_t)v->i; break;
        }
        ex_str s;
        st = ex_to_text(&c, t, &a, 0, &s);
        if (st == HS_OK)
            st = hs_buf_append(out, s.p, s.n);
    }
    hs_arena_destroy(&scratch);
    return st;
}

/* pr_parse_date / pr_parse_timestamp do not guard their arithmetic, so
 * text reaches them only with a year of at most 7 digits and, for
 * timestamps, whole seconds that fit the unit.  0 ok, 1 syntax, 2 range. */
static bool year_ok(const uint8_t *p, size_t n)
{
    size_t i = 0, d = 0;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        i++;
    while (i < n && isdigit(p[i])) {
        i++;
        d++;
    }
    return d <= 7;
}

static int parse_date_text(const uint8_t *p, size_t n, int64_t *days)
{
    int64_t secs;
    if (!year_ok(p, n))
        return 1;
    if (!pr_parse_date((const char *)p, n, days)) {
        if (!pr_parse_timestamp((const char *)p, n, HS_UNIT_SECOND, &secs))
            return 1;
        *days = ex_floor_div(secs, 86400); /* a time of day is dropped (PostgreSQL, DuckDB) */
    }
    return *days > INT32_MAX || *days < INT32_MIN ? 2 : 0;
}

static int parse_ts_text(const uint8_t *p, size_t n, int unit, int64_t *out)
{
    int64_t secs;
    if (!year_ok(p, n) || !pr_parse_timestamp((const char *)p, n, HS_UNIT_SECOND, &secs))
        return 1;
    int64_t lim = INT64_MAX / ex_unit_per_sec(unit) - 1;
    if (secs > lim || secs < -lim)
        return 2;
    return pr_parse_timestamp((const char *)p, n, (hs_time_unit)unit, out) ? 0 : 1;
}

bool ex_ts_interval_text(const char *ts, bool is_date, const char *iv, int mask, int sign,
                         char *out, size_t cap)
{
    int64_t t, r, days;
    size_t tn = strlen(ts);
    if (is_date) {
        if (parse_date_text((const uint8_t *)ts, tn, &days) != 0 || days > 106751990 ||
            days < -106751990) /* microseconds of int64 */
            return false;
        t = days * 86400 * ex_unit_per_sec(HS_UNIT_MICRO);
    } else if (parse_ts_text((const uint8_t *)ts, tn, HS_UNIT_MICRO, &t) != 0) {
        return false;
    }
    ex_interval v;
    if (!ex_interval_parse((const uint8_t *)iv, strlen(iv), mask, &v, NULL) ||
        !ex_ts_add_interval(t, HS_UNIT_MICRO, v, sign, &r))
        return false;
    ex_ty ty = {.t = EX_T_TS, .unit = HS_UNIT_MICRO};
    ex_value val = {.i = r};
    hs_buf b = {0};
    bool ok = ex_value_text(&ty, &val, &b) == HS_OK && b.len < cap;
    if (ok) {
        memcpy(out, b.data, b.len);
        out[b.len] = '\0';
    }
    hs_buf_free(&b);
    return ok;
}

/* A short printable form of a text value for error messages. */
static int clip(size_t n) { return n > 60 ? 60 : (int)n; }


hs_status ex_cast_rows(ex_ctx *c, const ex_node *n, const ex_ty *ft, const ex_vec *a,
                           const ex_sel *sel, int ns, ex_vec *out)
{
    const ex_ty *tt = &n->type;
    char b1[48];
    if (ex_is_pvx(tt->t) || ex_is_pvx(ft->t))
        return ex_pv_cast_rows(c, n, ft, a, sel, ns, out);
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->nul[j] = a->nul[j];
        if (a->nul[j])
            continue;
        const ex_str *s = &a->v.s[j];
        bool text = ft->t == EX_T_STR || ft->t == EX_T_UNKNOWN;
        switch (tt->t) {
        case EX_T_BOOL:
            if (ft->t == EX_T_BOOL)
                out->v.b[j] = a->v.b[j];
            else if (ft->t == EX_T_INT)
                out->v.b[j] = a->v.i[j] != 0;
            else if (!text || !parse_bool_text(s->p, s->n, &out->v.b[j]))
                return ex_fail(c, n, "invalid input syntax for type boolean: \"%.*s\"", clip(s->n), (const char *)s->p);
            break;
        case EX_T_INT: {
            int64_t v = 0;
            if (ft->t == EX_T_INT) {
                v = a->v.i[j];
            } else if (ft->t == EX_T_BOOL) {
                v = a->v.b[j];
            } else if (ft->t == EX_T_FLOAT) {
                double x = rint(a->v.f[j]);
                if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
                    return ex_fail(c, n, "%s out of range", ex_int_type_name(tt->bits));
                v = (int64_t)x;
            } else if (ft->t == EX_T_DEC) {
                __int128 q = ex_dec_round(a->v.d[j], ft->scale);
                if (q > INT64_MAX || q < INT64_MIN)
                    return ex_fail(c, n, "%s out of range", ex_int_type_name(tt->bits));
                v = (int64_t)q;
            } else if (text) {
                int r = parse_int_text(s->p, s->n, &v);
                if (r == 1)
                    return ex_fail(c, n, "invalid input syntax for type %s: \"%.*s\"", ex_int_type_name(tt->bits),
                                clip(s->n), (const char *)s->p);
                if (r == 2)
                    return ex_fail(c, n, "value \"%.*s\" is out of range for type %s", clip(s->n),
                                (const char *)s->p, ex_int_type_name(tt->bits));
            } else {
                goto bad;
            }
            if (!int_in_bits(v, tt->bits))
                return ex_fail(c, n, "%s out of range", ex_int_type_name(tt->bits));
            out->v.i[j] = v;
            break;
        }
        case EX_T_FLOAT: {
            double x;
            if (ft->t == EX_T_INT)
                x = (double)a->v.i[j];
            else if (ft->t == EX_T_FLOAT)
                x = a->v.f[j];
            else if (ft->t == EX_T_DEC)
                x = ex_dec_to_double(a->v.d[j], ft->scale);
            else if (text) {
                const uint8_t *p = s->p;
                size_t len = s->n;
                trim_span(&p, &len);
                char tmp[128];
                if (len == 0 || len >= sizeof tmp || (len > 1 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')))
                    return ex_fail(c, n, "invalid input syntax for type double: \"%.*s\"", clip(s->n), (const char *)s->p);
                memcpy(tmp, p, len);
                tmp[len] = '\0';
                char *end;
                x = hs_strtod(tmp, &end);
                if (*end)
                    return ex_fail(c, n, "invalid input syntax for type double: \"%.*s\"", clip(s->n), (const char *)s->p);
            } else {
                goto bad;
            }
            out->v.f[j] = tt->bits == 32 ? (double)(float)x : x;
            break;
        }
        case EX_T_DEC: {
            __int128 v = 0;
            int sc = tt->scale;
            if (ft->t == EX_T_INT) {
                if (!ex_dec_up(a->v.i[j], sc, &v))
                    goto dec_over;
            } else if (ft->t == EX_T_DEC) {
                v = a->v.d[j];
                if (sc >= ft->scale) {
                    if (!ex_dec_up(v, sc - ft->scale, &v))
                        goto dec_over;
                } else {
                    v = ex_dec_round(v, ft->scale - sc);
                }
            } else if (ft->t == EX_T_FLOAT) {
                /* PostgreSQL's float8_numeric: the double's text with
                 * DBL_DIG (15) significant digits (FLT_DIG, 6, for a
                 * real), read as a numeric, rounded to the scale */
                double x = a->v.f[j];
                char fb[40];
                if (!isfinite(x))
                    goto dec_over;
                int w = hs_snprintf_c(fb, sizeof fb, "%.*g", ft->bits == 32 ? 6 : 15, x);
                if (w <= 0 || (size_t)w >= sizeof fb ||
                    parse_dec_text((const uint8_t *)fb, (size_t)w, sc, &v) != 0)
                    goto dec_over;
            } else if (text) {
                int r = parse_dec_text(s->p, s->n, sc, &v);
                if (r == 1)
                    return ex_fail(c, n, "invalid input syntax for type numeric: \"%.*s\"", clip(s->n),
                                (const char *)s->p);
                if (r == 2)
                    goto dec_over;
            } else {
                goto bad;
            }
            if (tt->prec < 38) {
                __int128 lim = ex_pow10(tt->prec);
                if (v >= lim || v <= -lim)
                    goto dec_over;
            } else if (!ex_dec_fits(v)) {
                goto dec_over;
            }
            out->v.d[j] = v;
            break;
dec_over:
            return ex_fail(c, n, "numeric field overflow (%s)", ex_type_name(tt, b1, sizeof b1));
        }
        case EX_T_STR: case EX_T_UNKNOWN:
            HS_TRY(ex_to_text(c, ft, a, j, &out->v.s[j]));
            break;
        case EX_T_INTERVAL: {
            ex_interval iv;
            bool range;
            if (ft->t == EX_T_INTERVAL) {
                out->v.d[j] = a->v.d[j];
            } else if (text) {
                if (!ex_interval_parse(s->p, s->n, tt->dim, &iv, &range) && range)
                    return ex_fail(c, n, "interval field value out of range: \"%.*s\"", clip(s->n),
                                   (const char *)s->p);
                if (!ex_interval_parse(s->p, s->n, tt->dim, &iv, NULL) && ex_interval_iso_alt(s->p, s->n))
                    return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc,
                                     "ISO 8601 intervals in the alternative format (\"%.*s\") are not "
                                     "supported: use designators (P1Y2M3DT4H5M6S)", clip(s->n),
                                     (const char *)s->p);
                if (!ex_interval_parse(s->p, s->n, tt->dim, &iv, NULL))
                    return ex_fail(c, n, "invalid input syntax for type interval: \"%.*s\"", clip(s->n),
                                (const char *)s->p);
                out->v.d[j] = ex_iv_pack(iv);
            } else {
                goto bad;
            }
            break;
        }
        case EX_T_BIN:
            if (ft->t == EX_T_BIN && (!tt->uuid || ft->uuid || a->v.s[j].n == 16)) {
                out->v.s[j] = a->v.s[j];
            } else if (text && tt->uuid) {
                uint8_t *u = hs_arena_alloc(c->arena, 16);
                if (!u)
                    return hs_err_nomem(c->err, 16);
                if (!hs_uuid_parse((const char *)s->p, s->n, u))
                    return ex_fail(c, n, "invalid input syntax for type uuid: \"%.*s\"", clip(s->n), (const char *)s->p);
                out->v.s[j].p = u;
                out->v.s[j].n = 16;
            } else if (text) {
                out->v.s[j] = *s;
            } else {
                goto bad;
            }
            break;
        case EX_T_DATE:
            if (ft->t == EX_T_DATE) {
                out->v.i[j] = a->v.i[j];
            } else if (ft->t == EX_T_TS) {
                out->v.i[j] = ex_floor_div(a->v.i[j], 86400 * ex_unit_per_sec(ft->unit));
                if (out->v.i[j] > INT32_MAX || out->v.i[j] < INT32_MIN)
                    return ex_fail(c, n, "date out of range");
            } else if (text) {
                const uint8_t *p = s->p;
                size_t len = s->n;
                trim_span(&p, &len);
                int64_t days;
                int r = parse_date_text(p, len, &days);
                if (r == 2)
                    return ex_fail(c, n, "date out of range: \"%.*s\"", clip(s->n), (const char *)s->p);
                if (r == 1)
                    return ex_fail(c, n, "invalid input syntax for type date: \"%.*s\"", clip(s->n), (const char *)s->p);
                out->v.i[j] = days;
            } else {
                goto bad;
            }
            break;
        case EX_T_TS:
            if (ft->t == EX_T_TS) {
                if (!ex_unit_convert(a->v.i[j], ft->unit, tt->unit, &out->v.i[j]))
                    return ex_fail(c, n, "timestamp out of range");
            } else if (ft->t == EX_T_DATE) {
                if (__builtin_mul_overflow(a->v.i[j], 86400 * ex_unit_per_sec(tt->unit), &out->v.i[j]))
                    return ex_fail(c, n, "timestamp out of range");
            } else if (text) {
                const uint8_t *p = s->p;
                size_t len = s->n;
                trim_span(&p, &len);
                int r = parse_ts_text(p, len, tt->unit, &out->v.i[j]);
                if (r == 2)
                    return ex_fail(c, n, "timestamp out of range: \"%.*s\"", clip(s->n), (const char *)s->p);
                if (r == 1)
                    return ex_fail(c, n, "invalid input syntax for type timestamp: \"%.*s\"", clip(s->n),
                                (const char *)s->p);
            } else {
                goto bad;
            }
            break;
        case EX_T_TIME:
            if (ft->t == EX_T_TIME) {
                if (!ex_unit_convert(a->v.i[j], ft->unit, tt->unit, &out->v.i[j]))
                    return ex_fail(c, n, "time out of range");
            } else if (ft->t == EX_T_TS) {
                int64_t per_day = 86400 * ex_unit_per_sec(ft->unit);
                int64_t v = a->v.i[j] - ex_floor_div(a->v.i[j], per_day) * per_day;
                if (!ex_unit_convert(v, ft->unit, tt->unit, &out->v.i[j]))
                    return ex_fail(c, n, "time out of range");
            } else if (text) {
                const uint8_t *p = s->p;
                size_t len = s->n;
                trim_span(&p, &len);
                if (!pr_parse_time((const char *)p, len, (hs_time_unit)tt->unit, &out->v.i[j]))
                    return ex_fail(c, n, "invalid input syntax for type time: \"%.*s\"", clip(s->n), (const char *)s->p);
            } else {
                goto bad;
            }
            break;
        default:
            goto bad;
        }
        continue;
bad:;
        char b2[48];
        return ex_fail(c, n, "cannot cast type %s to %s", ex_type_name(ft, b1, sizeof b1),
                    ex_type_name(tt, b2, sizeof b2));
    }
    return HS_OK;
}
