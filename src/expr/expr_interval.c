/*
 * expr/expr_interval.c - PostgreSQL's interval type in expressions: its
 * text (input and the output of IntervalStyle postgres), date/timestamp
 * arithmetic and extract().
 *
 * Value.  PostgreSQL keeps an interval as three separate parts that do not
 * convert into each other implicitly: months, days and microseconds.  An
 * EX_T_INTERVAL value is those parts (ex_interval) stored in the 16 bytes of
 * a decimal slot (ex_value.d, ex_vec.v.d), so vectors, constants and folding
 * need nothing of their own:
 *
 *   bytes 0-7    micros   int64   the time part
 *   bytes 8-11   days     int32
 *   bytes 12-15  months   int32   (years are 12 months)
 *
 * Input: "[+-]N unit" pairs (year(s), mon(th)(s), week(s), day(s),
 * hour(s), min(ute)(s), sec(ond)(s), millisecond(s), microsecond(s) and
 * their abbreviations y, m (minutes, as PostgreSQL), w, d, h, s, ms, us),
 * fractional amounts of the time units, a clock part "[+-]HH:MM[:SS[.f]]",
 * and a trailing "ago" that negates; with a field qualifier (interval '90'
 * day) a bare number counts that field.  Fractions of years, months, weeks
 * and days (which PostgreSQL spreads into the smaller parts) are refused
 * (22007).  ISO 8601's format with designators (P1Y2M3DT4H5M6S, fractions
 * spread as PostgreSQL does) is read; its alternative format
 * (P0001-02-03T04:05:06) is not (ex_interval_iso_alt recognizes it: 0A000).
 *
 * justify_days, justify_hours, justify_interval: PostgreSQL 15's (30-day
 * months, 24-hour days, the signs of the parts made to agree).
 *
 * Arithmetic (PostgreSQL's timestamp_pl_interval): months first, with the
 * day clamped to the end of the month (2024-01-31 + 1 month = 2024-02-29),
 * then days, then the time part.  Time zones: timestamptz values are UTC
 * and the session time zone is UTC, so days are 24 hours.
 * timestamp - timestamp is days and time (interval_justify_hours).
 */
#include "expr/expr_int.h"

#include "base/numfmt.h"
#include "columnar/jsonl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USECS_PER_DAY 86400000000LL

__int128 ex_iv_pack(ex_interval v)
{
    __int128 d = 0;
    memcpy(&d, &v, sizeof v);
    return d;
}

ex_interval ex_iv_unpack(__int128 d)
{
    ex_interval v;
    memcpy(&v, &d, sizeof v);
    return v;
}

/* ---- input ---- */

static bool unit_of(const char *u, size_t n, int *kind, int64_t *mult)
{
    /* kind: 0 months, 1 days, 2 micros */
    static const struct { const char *name; int kind; int64_t mult; } t[] = {
        {"millennium", 0, 12000}, {"millenniums", 0, 12000}, {"millennia", 0, 12000},
        {"century", 0, 1200}, {"centuries", 0, 1200}, {"decade", 0, 120}, {"decades", 0, 120},
        {"y", 0, 12}, {"yr", 0, 12}, {"yrs", 0, 12}, {"year", 0, 12}, {"years", 0, 12},
        {"mon", 0, 1}, {"mons", 0, 1}, {"month", 0, 1}, {"months", 0, 1},
        {"w", 1, 7}, {"week", 1, 7}, {"weeks", 1, 7},
        {"d", 1, 1}, {"day", 1, 1}, {"days", 1, 1},
        {"h", 2, 3600000000LL}, {"hr", 2, 3600000000LL}, {"hrs", 2, 3600000000LL},
        {"hour", 2, 3600000000LL}, {"hours", 2, 3600000000LL},
        {"m", 2, 60000000}, {"min", 2, 60000000}, {"mins", 2, 60000000},
        {"minute", 2, 60000000}, {"minutes", 2, 60000000},
        {"s", 2, 1000000}, {"sec", 2, 1000000}, {"secs", 2, 1000000},
        {"second", 2, 1000000}, {"seconds", 2, 1000000},
        {"ms", 2, 1000}, {"msec", 2, 1000}, {"msecs", 2, 1000}, {"millisecond", 2, 1000},
        {"milliseconds", 2, 1000}, {"us", 2, 1}, {"usec", 2, 1}, {"usecs", 2, 1},
        {"microsecond", 2, 1}, {"microseconds", 2, 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strlen(t[i].name) == n && !strncasecmp(u, t[i].name, n)) {
            *kind = t[i].kind;
            *mult = t[i].mult;
            return true;
        }
    return false;
}

/* Field qualifiers of interval 'n' <field> (PostgreSQL's INTERVAL_MASK bits). */
static bool mask_unit(int mask, int *kind, int64_t *mult)
{
    switch (mask) {
    case 1 << 2: *kind = 0; *mult = 12; return true;          /* YEAR */
    case 1 << 1: *kind = 0; *mult = 1; return true;           /* MONTH */
    case 1 << 3: *kind = 1; *mult = 1; return true;           /* DAY */
    case 1 << 10: *kind = 2; *mult = 3600000000LL; return true; /* HOUR */
    case 1 << 11: *kind = 2; *mult = 60000000; return true;   /* MINUTE */
    case 1 << 12: *kind = 2; *mult = 1000000; return true;    /* SECOND */
    default: return false;
    }
}

/* Results of reading one part: PostgreSQL's DTERR_BAD_FORMAT (22007) and
 * DTERR_FIELD_OVERFLOW (22015). */
enum { PART_OK = 0, PART_BAD, PART_RANGE };

/* amount (exact in whole when integral) * mult into v's part kind. */
static int add_part(ex_interval *v, int kind, double amount, bool integral, int64_t whole, int64_t mult)
{
    int64_t r;
    if (kind == 2) {
        if (integral) {
            if (__builtin_mul_overflow(whole, mult, &r))
                return PART_RANGE;
        } else {
            double us = amount * (double)mult;
            if (isnan(us) || us > 9.2e18 || us < -9.2e18)
                return PART_RANGE;
            r = (int64_t)(us < 0 ? us - 0.5 : us + 0.5);
        }
        return __builtin_add_overflow(v->micros, r, &v->micros) ? PART_RANGE : PART_OK;
    }
    if (!integral)
        return amount != (double)(int64_t)amount ? PART_BAD /* fractions of months and days: see the top */
               : PART_RANGE;
    int32_t *dst = kind == 0 ? &v->months : &v->days;
    int64_t s;
    if (__builtin_mul_overflow(whole, mult, &r) || __builtin_add_overflow((int64_t)*dst, r, &s) ||
        s > INT32_MAX || s < INT32_MIN)
        return PART_RANGE;
    *dst = (int32_t)s;
    return PART_OK;
}

/* An optionally signed run of digits [p, end): its value exactly; false
 * when it is not one (then the caller reads a decimal). *range: beyond
 * int64. */
static bool whole_number(const char *p, const char *end, int64_t *out, bool *range)
{
    const char *q = p;
    bool neg = *q == '-';
    if (*q == '-' || *q == '+')
        q++;
    if (q == end)
        return false;
    int64_t v = 0;
    *range = false;
    for (; q < end; q++) {
        if (!isdigit((unsigned char)*q))
            return false;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, neg ? -(*q - '0') : *q - '0', &v))
            *range = true;
    }
    *out = v;
    return true;
}

/* PostgreSQL's AdjustFractSeconds: frac * scale seconds, whole seconds
 * and the fraction rounded to microseconds. */
static bool iso_fract_secs(ex_interval *v, double frac, int64_t scale)
{
    if (frac == 0)
        return true;
    frac *= (double)scale;
    if (frac > 9.2e12 || frac < -9.2e12)
        return false;
    int64_t sec = (int64_t)frac;
    int64_t us = sec * 1000000 + (int64_t)rint((frac - (double)sec) * 1e6);
    return !__builtin_add_overflow(v->micros, us, &v->micros);
}

/* AdjustFractDays: frac * scale days, whole days and the rest as seconds. */
static bool iso_fract_days(ex_interval *v, double frac, int scale)
{
    if (frac == 0)
        return true;
    frac *= scale;
    int extra = (int)frac;
    return !__builtin_add_overflow(v->days, extra, &v->days) &&
           iso_fract_secs(v, frac - extra, 86400);
}

/* ISO 8601's format with designators, PostgreSQL's DecodeISO8601Interval:
 * P[nY][nM][nW][nD][T[nH][nM][nS]], each n an optionally negative decimal
 * (fractions spread into the smaller parts as PostgreSQL does).  The
 * alternative format (P0001-02-03T04:05:06) is not read. */
static bool parse_iso8601(const char *s, ex_interval *out)
{
    ex_interval v = {0, 0, 0};
    bool datepart = true;
    if (strlen(s) < 2 || s[0] != 'P')
        return false;
    s++;
    while (*s) {
        if (*s == 'T') {
            datepart = false;
            s++;
            continue;
        }
        if (!(isdigit((unsigned char)*s) || *s == '-' || *s == '.'))
            return false;
        char *end;
        double val = hs_strtod(s, &end);
        if (end == s || isnan(val) || val < -9.2e18 || val > 9.2e18)
            return false;
        int64_t ip = val >= 0 ? (int64_t)floor(val) : -(int64_t)floor(-val);
        double fp = val - (double)ip;
        s = end;
        char unit = *s;
        if (unit)
            s++;
        int64_t t;
        bool ok;
        switch (datepart ? unit : unit | 0x80) {
        case 'Y':
            ok = !__builtin_mul_overflow(ip, 12, &t) &&
                 !__builtin_add_overflow(t, (int64_t)rint(fp * 12), &t) &&
                 !__builtin_add_overflow(v.months, t, &v.months) && t == (int32_t)t;
            break;
        case 'M':
            ok = ip == (int32_t)ip && !__builtin_add_overflow(v.months, (int32_t)ip, &v.months) &&
                 iso_fract_days(&v, fp, 30);
            break;
        case 'W':
            ok = !__builtin_mul_overflow(ip, 7, &t) && t == (int32_t)t &&
                 !__builtin_add_overflow(v.days, (int32_t)t, &v.days) && iso_fract_days(&v, fp, 7);
            break;
        case 'D':
            ok = ip == (int32_t)ip && !__builtin_add_overflow(v.days, (int32_t)ip, &v.days) &&
                 iso_fract_secs(&v, fp, 86400);
            break;
        case 'H' | 0x80: case 'M' | 0x80: case 'S' | 0x80: {
            int64_t secs = unit == 'H' ? 3600 : unit == 'M' ? 60 : 1;
            ok = !__builtin_mul_overflow(ip, secs * 1000000, &t) &&
                 !__builtin_add_overflow(v.micros, t, &v.micros) && iso_fract_secs(&v, fp, secs);
            break;
        }
        default:
            return false;
        }
        if (!ok)
            return false;
    }
    *out = v;
    return true;
}

bool ex_interval_iso_alt(const uint8_t *p, size_t n)
{
    /* 'P', then a field whose number ends the text or is followed by '-',
     * ':' or 'T' (DecodeISO8601Interval's alternative branches) */
    if (n < 2 || p[0] != 'P')
        return false;
    size_t i = 1;
    if (p[i] == 'T')
        i++;
    size_t d = i;
    while (i < n && (isdigit(p[i]) || p[i] == '.'))
        i++;
    return i > d && (i == n || p[i] == '-' || p[i] == ':' || (p[i] == 'T' && d == 1));
}

bool ex_interval_parse(const uint8_t *p, size_t n, int mask, ex_interval *out, bool *out_of_range)
{
    char buf[256];
    bool range_dummy;
    if (!out_of_range)
        out_of_range = &range_dummy;
    *out_of_range = false;
    if (n >= sizeof buf)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (n > 0 && buf[0] == 'P') /* with a field qualifier, not read (PostgreSQL truncates) */
        return mask == 0 && parse_iso8601(buf, out);
    ex_interval v = {0, 0, 0};
    const char *q = buf;
    bool any = false, ago = false;
    while (*q) {
        while (isspace((unsigned char)*q) || *q == '@')
            q++;
        if (!*q)
            break;
        if (!strncasecmp(q, "ago", 3) && (q[3] == '\0' || isspace((unsigned char)q[3]))) {
            ago = true;
            q += 3;
            continue;
        }
        const char *num = q;
        bool neg = *q == '-';
        if (*q == '-' || *q == '+')
            q++;
        if (!isdigit((unsigned char)*q) && *q != '.')
            return false;
        const char *digits = q;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q == ':') {
            /* clock: HH:MM[:SS[.f]], exact in microseconds */
            int64_t hh, mm = 0;
            bool hrange;
            double ss = 0;
            if (!whole_number(digits, q, &hh, &hrange) || hrange) {
                *out_of_range = true;
                return false;
            }
            q++;
            const char *m0 = q;
            while (isdigit((unsigned char)*q))
                q++;
            if (q == m0)
                return false;
            mm = strtol(m0, NULL, 10);
            if (*q == ':') {
                q++;
                char *end;
                ss = hs_strtod(q, &end);
                if (end == q || *q == '-' || *q == '+')
                    return false;
                q = end;
            }
            if (mm > 59 || ss >= 60)
                return false;
            int64_t us;
            if (__builtin_mul_overflow(hh, 3600000000LL, &us) ||
                __builtin_add_overflow(us, mm * 60000000 + (int64_t)rint(ss * 1e6), &us)) {
                *out_of_range = true;
                return false;
            }
            if (add_part(&v, 2, 0, true, neg ? -us : us, 1) != PART_OK) {
                *out_of_range = true;
                return false;
            }
            any = true;
            continue;
        }
        char *end;
        double amount = hs_strtod(num, &end);
        if (end == num)
            return false;
        int64_t whole = 0;
        bool wrange = false, integral = whole_number(num, end, &whole, &wrange);
        if (integral && wrange) {
            *out_of_range = true;
            return false;
        }
        q = end;
        while (isspace((unsigned char)*q))
            q++;
        const char *u = q;
        while (isalpha((unsigned char)*q))
            q++;
        int kind;
        int64_t mult;
        if (q == u) {
            if (!mask_unit(mask ? mask : 1 << 12, &kind, &mult)) /* a bare number is seconds */
                return false;
        } else if (!unit_of(u, (size_t)(q - u), &kind, &mult)) {
            return false;
        }
        int r = add_part(&v, kind, amount, integral, whole, mult);
        if (r != PART_OK) {
            *out_of_range = r == PART_RANGE;
            return false;
        }
        any = true;
    }
    if (!any)
        return false;
    if (ago && (v.months == INT32_MIN || v.days == INT32_MIN || v.micros == INT64_MIN)) {
        *out_of_range = true;
        return false;
    }
    if (ago) {
        v.months = -v.months;
        v.days = -v.days;
        v.micros = -v.micros;
    }
    *out = v;
    return true;
}

/* ---- arithmetic ---- */

bool ex_timestamp_add_interval(int64_t ts, hs_time_unit unit, hs_interval v, int64_t *out)
{
    return ex_ts_add_interval(ts, (int)unit, v, 1, out);
}

bool ex_ts_add_interval(int64_t ts, int unit, ex_interval v, int sign, int64_t *out)
{
    int64_t ups = ex_unit_per_sec(unit), per_day = 86400 * ups;
    int64_t days = ex_floor_div(ts, per_day), tod = ts - days * per_day;
    if (v.months != 0) {
        int64_t y;
        unsigned m, d;
        hs_civil_from_days(days, &y, &m, &d);
        int64_t ym = y * 12 + (m - 1) + sign * (int64_t)v.months;
        int64_t ny = ex_floor_div(ym, 12), nm = ym - ny * 12 + 1;
        static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        unsigned lim = mdays[nm - 1] + (nm == 2 && ((ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0));
        if (ny < -4713 || ny > 294276)
            return false;
        days = hs_days_from_civil(ny, (unsigned)nm, d > lim ? lim : d);
    }
    days += sign * (int64_t)v.days;
    /* the time part in the timestamp's unit (PostgreSQL's are microseconds) */
    int64_t tp;
    if (ups >= 1000000) {
        if (__builtin_mul_overflow(v.micros, ups / 1000000, &tp))
            return false;
    } else {
        tp = v.micros / (1000000 / ups);
    }
    int64_t r;
    if (__builtin_mul_overflow(days, per_day, &r) || __builtin_add_overflow(r, tod, &r) ||
        __builtin_add_overflow(r, sign * tp, &r))
        return false;
    *out = r;
    return true;
}

ex_interval ex_ts_diff(int64_t a, int64_t b, int unit)
{
    int64_t ups = ex_unit_per_sec(unit);
    int64_t d = a - b; /* callers check the subtraction */
    int64_t us = ups >= 1000000 ? d / (ups / 1000000) : d * (1000000 / ups);
    ex_interval v = {0, 0, 0};
    int64_t whole = us / USECS_PER_DAY;
    us -= whole * USECS_PER_DAY;
    if (whole > 0 && us < 0) {
        us += USECS_PER_DAY;
        whole--;
    } else if (whole < 0 && us > 0) {
        us -= USECS_PER_DAY;
        whole++;
    }
    v.days = (int32_t)whole;
    v.micros = us;
    return v;
}

bool ex_interval_part(ex_dfield f, ex_interval v, int64_t *out)
{
    int64_t t = v.micros;
    switch (f) {
    case EX_DF_YEAR: *out = v.months / 12; return true;
    case EX_DF_QUARTER: *out = (v.months % 12) / 3 + 1; return true;
    case EX_DF_MONTH: *out = v.months % 12; return true;
    case EX_DF_DAY: *out = v.days; return true;
    case EX_DF_HOUR: *out = t / 3600000000LL; return true;
    case EX_DF_MINUTE: *out = t / 60000000 % 60; return true;
    case EX_DF_SECOND: *out = t / 1000000 % 60; return true;
    case EX_DF_MILLISECOND: *out = t % 60000000 / 1000; return true;
    case EX_DF_MICROSECOND: *out = t % 60000000; return true;
    default: return false;
    }
}

double ex_interval_epoch(ex_interval v)
{
    /* PostgreSQL: a year is 365.25 days, a month 30 days */
    double secs = (double)(v.months / 12) * 365.25 * 86400.0 + (double)(v.months % 12) * 30.0 * 86400.0;
    return secs + (double)v.days * 86400.0 + (double)v.micros / 1e6;
}

/* ---- justify_days, justify_hours, justify_interval (PostgreSQL 15's) ---- */

#define DAYS_PER_MONTH 30

bool ex_interval_justify(int fn, ex_interval v, ex_interval *out)
{
    int64_t months = v.months, days = v.days, t = v.micros;
    if (fn == EX_FN_JUSTIFY_INTERVAL && ((days > 0 && t > 0) || (days < 0 && t < 0))) {
        months += days / DAYS_PER_MONTH; /* pre-justify days (PostgreSQL, against overflow) */
        days %= DAYS_PER_MONTH;
    }
    if (fn != EX_FN_JUSTIFY_DAYS) { /* whole days out of the time */
        days += t / USECS_PER_DAY;
        t %= USECS_PER_DAY;
    }
    if (fn != EX_FN_JUSTIFY_HOURS) { /* whole months out of the days */
        months += days / DAYS_PER_MONTH;
        days %= DAYS_PER_MONTH;
        bool t_neg = fn == EX_FN_JUSTIFY_INTERVAL && t < 0, t_pos = fn == EX_FN_JUSTIFY_INTERVAL && t > 0;
        if (months > 0 && (days < 0 || (days == 0 && t_neg))) {
            days += DAYS_PER_MONTH;
            months--;
        } else if (months < 0 && (days > 0 || (days == 0 && t_pos))) {
            days -= DAYS_PER_MONTH;
            months++;
        }
    }
    if (fn != EX_FN_JUSTIFY_DAYS) {
        if (days > 0 && t < 0) {
            t += USECS_PER_DAY;
            days--;
        } else if (days < 0 && t > 0) {
            t -= USECS_PER_DAY;
            days++;
        }
    }
    if (months > INT32_MAX || months < INT32_MIN || days > INT32_MAX || days < INT32_MIN)
        return false;
    out->months = (int32_t)months;
    out->days = (int32_t)days;
    out->micros = t;
    return true;
}

/* ---- age(timestamp, timestamp): PostgreSQL's timestamp_age ----
 * The field-wise difference (years, months, days, hours, minutes, seconds,
 * microseconds) of the later minus the earlier, negative fields borrowed
 * from the next larger one (a day borrows the length of a month: as
 * PostgreSQL, the first argument's month when it is the earlier timestamp,
 * else the second's), the sign restored last. */

typedef struct age_tm {
    int64_t year, mon, mday, hour, min, sec, usec;
} age_tm;

static void age_fields(int64_t v, int unit, age_tm *tm)
{
    int64_t ups = ex_unit_per_sec(unit), per_day = 86400 * ups;
    int64_t days = ex_floor_div(v, per_day), t = v - days * per_day;
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(days, &y, &m, &d);
    tm->year = y;
    tm->mon = m;
    tm->mday = d;
    int64_t secs = t / ups;
    tm->hour = secs / 3600;
    tm->min = secs / 60 % 60;
    tm->sec = secs % 60;
    int64_t frac = t % ups;
    tm->usec = ups >= 1000000 ? frac / (ups / 1000000) : frac * (1000000 / ups);
}

static int days_in_month(int64_t y, int64_t m)
{
    static const int md[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return md[m - 1] + (m == 2 && leap);
}

bool ex_ts_age(int64_t a, int64_t b, int unit, ex_interval *out)
{
    age_tm t1, t2, r;
    age_fields(a, unit, &t1);
    age_fields(b, unit, &t2);
    bool flip = a < b;
    int s = flip ? -1 : 1;
    r.usec = s * (t1.usec - t2.usec);
    r.sec = s * (t1.sec - t2.sec);
    r.min = s * (t1.min - t2.min);
    r.hour = s * (t1.hour - t2.hour);
    r.mday = s * (t1.mday - t2.mday);
    r.mon = s * (t1.mon - t2.mon);
    r.year = s * (t1.year - t2.year);
    while (r.usec < 0) {
        r.usec += 1000000;
        r.sec--;
    }
    while (r.sec < 0) {
        r.sec += 60;
        r.min--;
    }
    while (r.min < 0) {
        r.min += 60;
        r.hour--;
    }
    while (r.hour < 0) {
        r.hour += 24;
        r.mday--;
    }
    while (r.mday < 0) {
        r.mday += flip ? days_in_month(t1.year, t1.mon) : days_in_month(t2.year, t2.mon);
        r.mon--;
    }
    while (r.mon < 0) {
        r.mon += 12;
        r.year--;
    }
    int64_t months = s * (r.year * 12 + r.mon), days = s * r.mday;
    int64_t micros = s * (((r.hour * 60 + r.min) * 60 + r.sec) * 1000000 + r.usec);
    if (months > INT32_MAX || months < INT32_MIN || days > INT32_MAX || days < INT32_MIN)
        return false;
    out->months = (int32_t)months;
    out->days = (int32_t)days;
    out->micros = micros;
    return true;
}
