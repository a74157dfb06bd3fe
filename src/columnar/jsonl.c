/*
 * columnar/jsonl.c - column batches as JSON Lines (the encoding table is in
 * jsonl.h; docs/jsonl.md is the user-facing reference).
 *
 * Design: one recursive function, json_value(), dispatches on the field type
 * and formats one slot straight into the output buffer.  Every branch first
 * reserves an upper bound of the bytes it may write (a number: 48; a string of
 * n bytes: 6n + 2; base64: 4n/3 + 4), then writes through a raw pointer, so
 * the hot path has no per-byte bounds checks and no allocation.  Nested values
 * recurse into child columns using Arrow offsets (LIST/MAP), a fixed stride
 * (FIXED_LIST) or the same row (STRUCT).
 *
 * Numbers: integers are printed with a hand-written u64 formatter.  Doubles
 * take the shortest of %.15g/%.16g/%.17g that strtod reads back bit-exactly
 * (%.15g is tried first because 15 digits always survive text -> double ->
 * text, so most "human" values print as typed); floats likewise from %.6g up
 * to %.9g with strtof.  For normal numbers the first precision that reads
 * back is the shortest text (the nearest decimal of that length: the same
 * digits Ryu/numpy print); subnormals start the search at 1 digit.  -0.0 prints as "-0.0" so JSON readers that turn "-0"
 * into an integer keep the sign.  Non-finite values become the strings
 * "NaN", "Infinity", "-Infinity".
 *
 * Calendar: days <-> civil dates with Howard Hinnant's branch-light
 * algorithms (proleptic Gregorian, any int64 day count), so dates and
 * timestamps need no libc time functions and no time-zone database: Arrow
 * stores zoned timestamps as UTC instants, which print with a "Z" suffix.
 */
#include "columnar/jsonl.h"
#include "base/interval.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* numbers                                                              */

static inline char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static inline char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

/* Zero-padded to `width` digits (v >= 0). */
static inline char *put_pad(char *p, uint64_t v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

int hs_fmt_double(double v, char *dst)
{
    if (v == 0) {
        if (signbit(v)) {
            memcpy(dst, "-0.0", 5);
            return 4;
        }
        memcpy(dst, "0", 2);
        return 1;
    }
    int n = 0;
    /* Subnormals have fewer significant bits, so shorter texts may round-trip. */
    for (int prec = fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
        n = hs_snprintf_c(dst, 32, "%.*g", prec, v);
        if (prec == 17 || hs_strtod(dst, NULL) == v)
            break;
    }
    return n;
}

int hs_fmt_float(float v, char *dst)
{
    if (v == 0) {
        if (signbit(v)) {
            memcpy(dst, "-0.0", 5);
            return 4;
        }
        memcpy(dst, "0", 2);
        return 1;
    }
    int n = 0;
    for (int prec = fabsf(v) < FLT_MIN ? 1 : 6; prec <= 9; prec++) {
        n = hs_snprintf_c(dst, 32, "%.*g", prec, (double)v);
        if (prec == 9 || hs_strtof(dst, NULL) == v)
            break;
    }
    return n;
}

float hs_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: value = mant * 2^-24 */
            float f = (float)mant * 5.9604644775390625e-08f;
            return sign ? -f : f;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t hs_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t exp = (x >> 23) & 0xff;
    uint32_t mant = x & 0x7fffff;
    if (exp == 255) /* inf / nan (keep a quiet NaN bit) */
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) { /* subnormal half or zero */
        if (e < -10)
            return sign;
        mant |= 0x800000;
        int shift = 14 - e;
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++; /* may carry into the exponent, which is still correct */
    return (uint16_t)(sign | half);
}

/* ------------------------------------------------------------------ */
/* calendar                                                             */

static inline int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

void hs_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

int64_t hs_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static char *put_date(char *p, int64_t days)
{
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(days, &y, &m, &d);
    if (y < 0) {
        *p++ = '-';
        uint64_t ay = (uint64_t)0 - (uint64_t)y;
        p = ay < 10000 ? put_pad(p, ay, 4) : put_u64(p, ay);
    } else {
        p = y < 10000 ? put_pad(p, (uint64_t)y, 4) : put_u64(p, (uint64_t)y);
    }
    *p++ = '-';
    p = put_pad(p, m, 2);
    *p++ = '-';
    return put_pad(p, d, 2);
}

static const int64_t units_per_sec[4] = {1, 1000, 1000000, 1000000000};

/* "HH:MM:SS.ffffff" from a non-negative count of `unit` within one day
 * (values beyond a day print hours >= 24; they only occur in bad data). */
static char *put_time_of_day(char *p, int64_t v, hs_time_unit unit)
{
    int64_t ups = units_per_sec[unit];
    int64_t secs = floor_div(v, ups);
    int64_t frac = v - secs * ups;
    int64_t h = floor_div(secs, 3600);
    int64_t rest = secs - h * 3600;
    if (h < 0) {
        *p++ = '-';
        h = -h;
    }
    p = h < 100 ? put_pad(p, (uint64_t)h, 2) : put_u64(p, (uint64_t)h);
    *p++ = ':';
    p = put_pad(p, (uint64_t)(rest / 60), 2);
    *p++ = ':';
    p = put_pad(p, (uint64_t)(rest % 60), 2);
    *p++ = '.';
    switch (unit) {
    case HS_UNIT_SECOND: return put_pad(p, 0, 6);
    case HS_UNIT_MILLI: return put_pad(p, (uint64_t)frac * 1000, 6);
    case HS_UNIT_MICRO: return put_pad(p, (uint64_t)frac, 6);
    default: return put_pad(p, (uint64_t)frac, 9);
    }
}

static char *put_timestamp(char *p, int64_t v, hs_time_unit unit, bool utc)
{
    int64_t upd = units_per_sec[unit] * 86400;
    int64_t days = floor_div(v, upd);
    p = put_date(p, days);
    *p++ = 'T';
    p = put_time_of_day(p, v - days * upd, unit);
    if (utc)
        *p++ = 'Z';
    return p;
}

/* Decimal128: little-endian two's complement, `scale` digits after the point. */
static char *put_decimal(char *p, const uint8_t *le16, int scale)
{
    unsigned __int128 u = 0;
    for (int i = 15; i >= 0; i--)
        u = (u << 8) | le16[i];
    bool neg = (le16[15] & 0x80) != 0;
    if (neg)
        u = ~u + 1;
    char digits[48];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (neg)
        *p++ = '-';
    if (scale <= 0) {
        bool zero = n == 1 && digits[0] == '0';
        while (n)
            *p++ = digits[--n];
        for (int i = 0; i < -scale && !zero; i++) /* negative scale: value * 10^-scale */
            *p++ = '0';
        return p;
    }
    if (n <= scale) {
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < scale - n; i++)
            *p++ = '0';
        while (n)
            *p++ = digits[--n];
        return p;
    }
    while (n > scale)
        *p++ = digits[--n];
    *p++ = '.';
    while (n)
        *p++ = digits[--n];
    return p;
}

/* ------------------------------------------------------------------ */
/* strings                                                              */

/* 0 = copy as is; 1 = escape; 2 = non-ASCII (validate) */
static const uint8_t char_class[256] = {
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
    2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
    2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
    2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
};

/* Length of the valid UTF-8 sequence at s (lead byte >= 0x80), or, when it is
 * invalid, minus the length of its maximal subpart (Unicode 3.9, as Python's
 * and WHATWG's decoders replace). */
static int utf8_seq(const uint8_t *s, size_t avail)
{
    uint8_t c = s[0];
    int need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) { need = 2; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) need = 2;
    else if (c == 0xED) { need = 2; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) need = 2;
    else if (c == 0xF0) { need = 3; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else if (c == 0xF4) { need = 3; hi = 0x8F; }
    else return -1;
    int i = 1;
    for (; i <= need; i++) {
        if ((size_t)i >= avail)
            return -i;
        uint8_t b = s[i];
        if (b < lo || b > hi)
            return -i;
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

size_t hs_utf8_valid_prefix(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int len = utf8_seq(s + i, n - i);
        if (len < 0)
            return i;
        i += (size_t)len;
    }
    return n;
}

static char *put_string(char *p, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    *p++ = '"';
    while (i < n) {
        size_t run = i;
        while (run < n && char_class[s[run]] == 0)
            run++;
        if (run > i) {
            memcpy(p, s + i, run - i);
            p += run - i;
            i = run;
            if (i == n)
                break;
        }
        uint8_t c = s[i];
        if (char_class[c] == 1) {
            *p++ = '\\';
            switch (c) {
            case '"': *p++ = '"'; break;
            case '\\': *p++ = '\\'; break;
            case '\n': *p++ = 'n'; break;
            case '\r': *p++ = 'r'; break;
            case '\t': *p++ = 't'; break;
            case '\b': *p++ = 'b'; break;
            case '\f': *p++ = 'f'; break;
            default:
                memcpy(p, "u00", 3);
                p += 3;
                *p++ = hex[c >> 4];
                *p++ = hex[c & 15];
            }
            i++;
        } else {
            int len = utf8_seq(s + i, n - i);
            if (len > 0) {
                memcpy(p, s + i, (size_t)len);
                p += len;
                i += (size_t)len;
            } else {
                memcpy(p, "\xEF\xBF\xBD", 3);
                p += 3;
                i += (size_t)-len;
            }
        }
    }
    *p++ = '"';
    return p;
}

hs_status hs_json_append_string(hs_buf *out, const uint8_t *s, size_t n)
{
    if (n > (SIZE_MAX - 16) / 6)
        return HS_NOMEM;
    HS_TRY(hs_buf_reserve(out, n * 6 + 2));
    char *p = (char *)out->data + out->len;
    char *e = put_string(p, s, n);
    out->len += (size_t)(e - p);
    return HS_OK;
}

static char *put_base64(char *p, const uint8_t *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0;
    *p++ = '"';
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *p++ = tab[v >> 18];
        *p++ = tab[(v >> 12) & 63];
        *p++ = tab[(v >> 6) & 63];
        *p++ = tab[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *p++ = tab[v >> 18];
        *p++ = tab[(v >> 12) & 63];
        *p++ = '=';
        *p++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        *p++ = tab[v >> 18];
        *p++ = tab[(v >> 12) & 63];
        *p++ = tab[(v >> 6) & 63];
        *p++ = '=';
    }
    *p++ = '"';
    return p;
}

bool hs_uuid_parse(const char *s, size_t n, uint8_t out[16])
{
    if (n >= 2 && s[0] == '{' && s[n - 1] == '}') {
        s++;
        n -= 2;
    }
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '-')
            continue;
        int v = (c >= '0' && c <= '9') ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (v < 0 || k >= 32)
            return false;
        if (k % 2 == 0)
            out[k / 2] = (uint8_t)(v << 4);
        else
            out[k / 2] |= (uint8_t)v;
        k++;
    }
    return k == 32;
}

static char *put_uuid(char *p, const uint8_t *s)
{
    static const char hex[] = "0123456789abcdef";
    *p++ = '"';
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[s[i] >> 4];
        *p++ = hex[s[i] & 15];
    }
    *p++ = '"';
    return p;
}

/* ------------------------------------------------------------------ */
/* values                                                               */

static char *put_double(char *p, double v)
{
    if (isnan(v)) {
        memcpy(p, "\"NaN\"", 5);
        return p + 5;
    }
    if (isinf(v)) {
        if (v > 0) {
            memcpy(p, "\"Infinity\"", 10);
            return p + 10;
        }
        memcpy(p, "\"-Infinity\"", 11);
        return p + 11;
    }
    return p + hs_fmt_double(v, p);
}

static char *put_float(char *p, float v)
{
    if (isnan(v) || isinf(v))
        return put_double(p, (double)v);
    return p + hs_fmt_float(v, p);
}

/* Reserve `n` bytes and return the write pointer. */
#define RESERVE(out, n, p)                          \
    do {                                            \
        HS_TRY(hs_buf_reserve((out), (n)));         \
        (p) = (char *)(out)->data + (out)->len;     \
    } while (0)
#define COMMIT(out, e, p) ((out)->len += (size_t)((e) - (p)))

static hs_status json_value(const hs_field *f, const hs_column *c, int64_t row, hs_buf *out);

static hs_status json_elements(const hs_field *ef, const hs_column *ec, int64_t from, int64_t to,
                               hs_buf *out)
{
    HS_TRY(hs_buf_append_byte(out, '['));
    for (int64_t j = from; j < to; j++) {
        if (j > from)
            HS_TRY(hs_buf_append_byte(out, ','));
        HS_TRY(json_value(ef, ec, j, out));
    }
    return hs_buf_append_byte(out, ']');
}

static hs_status json_value(const hs_field *f, const hs_column *c, int64_t row, hs_buf *out)
{
    char *p, *e;
    if (f->type == HS_TYPE_NA || !hs_col_is_valid(c, row))
        return hs_buf_append(out, "null", 4);
    /* a column of empty strings may have no value buffer at all */
    static const uint8_t none[1];
    const uint8_t *vals = c->values.data ? c->values.data : none;
    switch (f->type) {
    case HS_TYPE_BOOL:
        if (hs_bit_get(vals, row))
            return hs_buf_append(out, "true", 4);
        return hs_buf_append(out, "false", 5);
    case HS_TYPE_INT8: RESERVE(out, 24, p); e = put_i64(p, ((const int8_t *)vals)[row]); break;
    case HS_TYPE_INT16: RESERVE(out, 24, p); e = put_i64(p, ((const int16_t *)vals)[row]); break;
    case HS_TYPE_INT32: RESERVE(out, 24, p); e = put_i64(p, ((const int32_t *)vals)[row]); break;
    case HS_TYPE_INT64: RESERVE(out, 24, p); e = put_i64(p, ((const int64_t *)vals)[row]); break;
    case HS_TYPE_UINT8: RESERVE(out, 24, p); e = put_u64(p, vals[row]); break;
    case HS_TYPE_UINT16: RESERVE(out, 24, p); e = put_u64(p, ((const uint16_t *)vals)[row]); break;
    case HS_TYPE_UINT32: RESERVE(out, 24, p); e = put_u64(p, ((const uint32_t *)vals)[row]); break;
    case HS_TYPE_UINT64: RESERVE(out, 24, p); e = put_u64(p, ((const uint64_t *)vals)[row]); break;
    case HS_TYPE_FLOAT16: {
        float h = hs_half_to_float(((const uint16_t *)vals)[row]);
        RESERVE(out, 48, p);
        e = put_double(p, (double)h); /* exact: every half is a short double */
        break;
    }
    case HS_TYPE_FLOAT32: RESERVE(out, 48, p); e = put_float(p, ((const float *)vals)[row]); break;
    case HS_TYPE_FLOAT64: RESERVE(out, 48, p); e = put_double(p, ((const double *)vals)[row]); break;
    case HS_TYPE_DECIMAL128:
        RESERVE(out, 96 + (f->scale < 0 ? (size_t)-f->scale : 0), p);
        *p = '"';
        e = put_decimal(p + 1, vals + 16 * row, f->scale);
        *e++ = '"';
        break;
    case HS_TYPE_DATE32:
        RESERVE(out, 48, p);
        *p = '"';
        e = put_date(p + 1, ((const int32_t *)vals)[row]);
        *e++ = '"';
        break;
    case HS_TYPE_TIME32:
    case HS_TYPE_TIME64: {
        int64_t v = f->type == HS_TYPE_TIME32 ? ((const int32_t *)vals)[row]
                                              : ((const int64_t *)vals)[row];
        RESERVE(out, 64, p);
        *p = '"';
        e = put_time_of_day(p + 1, v, f->unit);
        *e++ = '"';
        break;
    }
    case HS_TYPE_TIMESTAMP:
        RESERVE(out, 80, p);
        *p = '"';
        e = put_timestamp(p + 1, ((const int64_t *)vals)[row], f->unit, f->tz != NULL);
        *e++ = '"';
        break;
    case HS_TYPE_STRING: {
        const int32_t *off = HS_COL_OFFSETS(c);
        return hs_json_append_string(out, vals + off[row], (size_t)(off[row + 1] - off[row]));
    }
    case HS_TYPE_INTERVAL: {   /* PostgreSQL's text, as its row_to_json writes it */
        hs_interval v;
        char txt[128];
        memcpy(&v, vals + 16 * (size_t)row, 16);
        return hs_json_append_string(out, (const uint8_t *)txt, hs_interval_format(v, txt, sizeof txt));
    }
    case HS_TYPE_BINARY: {
        const int32_t *off = HS_COL_OFFSETS(c);
        size_t n = (size_t)(off[row + 1] - off[row]);
        RESERVE(out, n / 3 * 4 + 8, p);
        e = put_base64(p, vals + off[row], n);
        break;
    }
    case HS_TYPE_FIXED_BINARY: {
        size_t w = (size_t)c->width;
        const uint8_t *s = vals + w * (size_t)row;
        RESERVE(out, w / 3 * 4 + 48, p);
        e = (f->ext == HS_EXT_UUID && w == 16) ? put_uuid(p, s) : put_base64(p, s, w);
        break;
    }
    case HS_TYPE_LIST: {
        const int32_t *off = HS_COL_OFFSETS(c);
        return json_elements(&f->children[0], c->children[0], off[row], off[row + 1], out);
    }
    case HS_TYPE_FIXED_LIST: {
        int64_t w = c->width;
        return json_elements(&f->children[0], c->children[0], row * w, row * w + w, out);
    }
    case HS_TYPE_STRUCT:
        HS_TRY(hs_buf_append_byte(out, '{'));
        for (int i = 0; i < f->n_children; i++) {
            const char *name = f->children[i].name;
            if (i)
                HS_TRY(hs_buf_append_byte(out, ','));
            HS_TRY(hs_json_append_string(out, (const uint8_t *)name, strlen(name)));
            HS_TRY(hs_buf_append_byte(out, ':'));
            HS_TRY(json_value(&f->children[i], c->children[i], row, out));
        }
        return hs_buf_append_byte(out, '}');
    case HS_TYPE_MAP: {
        const int32_t *off = HS_COL_OFFSETS(c);
        const hs_field *ef = &f->children[0];
        const hs_column *ec = c->children[0];
        HS_TRY(hs_buf_append_byte(out, '['));
        for (int64_t j = off[row]; j < off[row + 1]; j++) {
            if (j > off[row])
                HS_TRY(hs_buf_append_byte(out, ','));
            HS_TRY(hs_buf_append(out, "{\"key\":", 7));
            HS_TRY(json_value(&ef->children[0], ec->children[0], j, out));
            HS_TRY(hs_buf_append(out, ",\"value\":", 9));
            if (ef->n_children > 1)
                HS_TRY(json_value(&ef->children[1], ec->children[1], j, out));
            else
                HS_TRY(hs_buf_append(out, "null", 4));
            HS_TRY(hs_buf_append_byte(out, '}'));
        }
        return hs_buf_append_byte(out, ']');
    }
    default:
        return HS_UNSUPPORTED;
    }
    COMMIT(out, e, p);
    return HS_OK;
}

hs_status hs_json_append_value(const hs_field *f, const hs_column *c, int64_t row, hs_buf *out)
{
    if (row < 0 || row >= c->length)
        return HS_INVALID;
    return json_value(f, c, row, out);
}

hs_status hs_json_append_scalar(const hs_field *f, const void *v, size_t len, hs_buf *out)
{
    hs_column c;
    int32_t off[2] = {0, (int32_t)len};
    uint8_t bit;
    memset(&c, 0, sizeof c);
    if (len > INT32_MAX || f->n_children > 0 || f->type == HS_TYPE_LIST || f->type == HS_TYPE_MAP ||
        f->type == HS_TYPE_STRUCT || f->type == HS_TYPE_FIXED_LIST)
        return HS_INVALID;
    c.type = f->type;
    c.length = 1;
    c.width = f->type == HS_TYPE_FIXED_BINARY ? (int32_t)len : hs_type_width(f);
    c.values.data = (uint8_t *)v;
    c.offsets.data = (uint8_t *)off;
    if (f->type == HS_TYPE_BOOL) {
        bit = *(const uint8_t *)v ? 1 : 0;
        c.values.data = &bit;
    }
    return json_value(f, &c, 0, out);
}

hs_status hs_batch_write_jsonl(const hs_batch *b, int64_t start, int64_t n, hs_buf *out)
{
    if (start < 0 || n < 0 || start > b->n_rows || n > b->n_rows - start)
        return HS_INVALID;
    /* Keys ("name":) are escaped once per call. */
    hs_buf keys = {0};
    size_t *key_end = hs_calloc((size_t)b->n_cols + 1, sizeof(size_t));
    hs_status st = key_end ? HS_OK : HS_NOMEM;
    for (int i = 0; st == HS_OK && i < b->n_cols; i++) {
        const char *name = b->schema.children[i].name;
        if (i)
            st = hs_buf_append_byte(&keys, ',');
        if (st == HS_OK)
            st = hs_json_append_string(&keys, (const uint8_t *)name, strlen(name));
        if (st == HS_OK)
            st = hs_buf_append_byte(&keys, ':');
        if (st == HS_OK)
            key_end[i + 1] = keys.len;
    }
    for (int64_t r = start; st == HS_OK && r < start + n; r++) {
        st = hs_buf_append_byte(out, '{');
        for (int i = 0; st == HS_OK && i < b->n_cols; i++) {
            st = hs_buf_append(out, keys.data + key_end[i], key_end[i + 1] - key_end[i]);
            if (st == HS_OK)
                st = json_value(&b->schema.children[i], b->cols[i], r, out);
        }
        if (st == HS_OK)
            st = hs_buf_append(out, "}\n", 2);
    }
    hs_free(key_end);
    hs_buf_free(&keys);
    return st;
}
