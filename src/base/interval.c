/*
 * base/interval.c - PostgreSQL's interval value (see interval.h): order,
 * hash key, IntervalStyle postgres output, arithmetic, Arrow month_day_nano.
 */
#include "base/interval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__int128 hs_interval_span(hs_interval v)
{
    return ((__int128)v.months * 30 + v.days) * HS_USECS_PER_DAY + v.micros;
}

int hs_interval_cmp(hs_interval a, hs_interval b)
{
    __int128 x = hs_interval_span(a), y = hs_interval_span(b);
    return x < y ? -1 : x > y;
}

void hs_interval_key(hs_interval v, uint8_t out[16])
{
    __int128 s = hs_interval_span(v);
    memcpy(out, &s, 16);
}

/* ---- output (IntervalStyle postgres: EncodeInterval) ---- */

static size_t int_part(char *cp, int64_t value, const char *units, bool *is_zero, bool *is_before)
{
    if (value == 0)
        return 0;
    int w = snprintf(cp, 48, "%s%s%lld %s%s", !*is_zero ? " " : "", (*is_before && value > 0) ? "+" : "",
                     (long long)value, units, value != 1 ? "s" : "");
    *is_before = value < 0;
    *is_zero = false;
    return w > 0 ? (size_t)w : 0;
}

size_t hs_interval_format(hs_interval v, char *buf, size_t cap)
{
    char tmp[200];
    char *cp = tmp;
    bool is_zero = true, is_before = false;
    int64_t year = v.months / 12, mon = v.months % 12;
    int64_t t = v.micros;
    int64_t hour = t / 3600000000LL;
    t -= hour * 3600000000LL;
    int64_t min = t / 60000000;
    t -= min * 60000000;
    int64_t sec = t / 1000000, fsec = t - sec * 1000000;
    cp += int_part(cp, year, "year", &is_zero, &is_before);
    cp += int_part(cp, mon, "mon", &is_zero, &is_before);
    cp += int_part(cp, v.days, "day", &is_zero, &is_before);
    if (is_zero || hour != 0 || min != 0 || sec != 0 || fsec != 0) {
        bool minus = hour < 0 || min < 0 || sec < 0 || fsec < 0;
        int w = snprintf(cp, 80, "%s%s%02lld:%02lld:%02lld", is_zero ? "" : " ",
                         minus ? "-" : is_before ? "+" : "", (long long)llabs(hour),
                         (long long)llabs(min), (long long)llabs(sec));
        cp += w > 0 ? w : 0;
        if (fsec != 0) {
            char f[24];
            snprintf(f, sizeof f, "%06lld", (long long)llabs(fsec));
            size_t fl = 6;
            while (fl > 0 && f[fl - 1] == '0')
                fl--;
            *cp++ = '.';
            memcpy(cp, f, fl);
            cp += fl;
        }
    }
    *cp = '\0';
    size_t len = (size_t)(cp - tmp);
    if (cap > 0) {
        size_t k = len < cap - 1 ? len : cap - 1;
        memcpy(buf, tmp, k);
        buf[k] = '\0';
    }
    return len;
}

bool hs_interval_neg(hs_interval v, hs_interval *out)
{
    if (v.months == INT32_MIN || v.days == INT32_MIN || v.micros == INT64_MIN)
        return false;
    out->months = -v.months;
    out->days = -v.days;
    out->micros = -v.micros;
    return true;
}

bool hs_interval_add(hs_interval a, hs_interval b, int sign, hs_interval *out)
{
    int64_t m = (int64_t)a.months + sign * (int64_t)b.months;
    int64_t d = (int64_t)a.days + sign * (int64_t)b.days;
    int64_t us;
    if (m > INT32_MAX || m < INT32_MIN || d > INT32_MAX || d < INT32_MIN ||
        (sign > 0 ? __builtin_add_overflow(a.micros, b.micros, &us)
                  : __builtin_sub_overflow(a.micros, b.micros, &us)))
        return false;
    out->months = (int32_t)m;
    out->days = (int32_t)d;
    out->micros = us;
    return true;
}

/* interval * factor (div: interval / factor) as PostgreSQL's interval_mul
 * and interval_div: each part is scaled, and the fractions of months carry
 * into days (30 a month) and those of days into the time part. */
#define TSROUND(x) (rint((x) * 1000000.0) / 1000000.0)
bool hs_interval_mul(hs_interval v, double factor, bool div, hs_interval *out)
{
    double m = div ? v.months / factor : v.months * factor;
    double d = div ? v.days / factor : v.days * factor;
    if (isnan(m) || m > INT32_MAX || m < INT32_MIN || isnan(d) || d > INT32_MAX || d < INT32_MIN)
        return false;
    hs_interval r;
    r.months = (int32_t)m;
    r.days = (int32_t)d;
    double month_remainder_days = TSROUND((m - r.months) * 30.0);
    double sec_remainder = TSROUND((d - r.days + month_remainder_days - (int)month_remainder_days) * 86400.0);
    /* PostgreSQL adds the carried days unchecked, and builds with -fwrapv:
     * the same wrap-around here, without C's signed overflow */
    int64_t days = r.days;
    if (fabs(sec_remainder) >= 86400.0) {
        days += (int)(sec_remainder / 86400.0);
        sec_remainder -= (int)(sec_remainder / 86400.0) * 86400.0;
    }
    days += (int)month_remainder_days;
    r.days = (int32_t)(uint32_t)(uint64_t)days;
    double t = rint((div ? (double)v.micros / factor : (double)v.micros * factor) + sec_remainder * 1e6);
    if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0))   /* FLOAT8_FITS_IN_INT64 */
        return false;
    r.micros = (int64_t)t;
    *out = r;
    return true;
}

bool hs_interval_to_mdn(hs_interval v, uint8_t out[16])
{
    int64_t nanos;
    if (__builtin_mul_overflow(v.micros, (int64_t)1000, &nanos))
        return false;
    memcpy(out, &v.months, 4);
    memcpy(out + 4, &v.days, 4);
    memcpy(out + 8, &nanos, 8);
    return true;
}

hs_interval hs_interval_from_mdn(const uint8_t in[16])
{
    hs_interval v;
    int64_t nanos;
    memcpy(&v.months, in, 4);
    memcpy(&v.days, in + 4, 4);
    memcpy(&nanos, in + 8, 8);
    v.micros = nanos / 1000;
    return v;
}
