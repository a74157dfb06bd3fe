/*
 * iceberg/value.c - Iceberg primitive types and typed literals (ice_value):
 * the spec's single-value binary and JSON serializations, ordering, bound
 * truncation, and reading one element of a column.  Also the small key/value
 * map (ice_kv), calendar and text helpers, and random identifiers.
 *
 * Single-value binary serialization (spec Appendix D), as used for column
 * lower/upper bounds in manifests:
 *
 *   type                         bytes
 *   --------------------------   -------------------------------------------------
 *   boolean                      1 byte, 0x00 false / 0x01 true
 *   int, date                    4 bytes little-endian (date: days since 1970-01-01)
 *   long, time, timestamp(tz)    8 bytes little-endian (time/timestamp: micros;
 *                                *_ns: nanos)
 *   float / double               IEEE 754 4 / 8 bytes little-endian
 *   string                       UTF-8 bytes, no length
 *   uuid                         16 bytes big-endian
 *   fixed[L] / binary            the bytes
 *   decimal(P,S)                 unscaled value, big-endian two's complement,
 *                                minimum number of bytes
 *
 * Single-value JSON serialization: booleans and numbers as JSON; decimal as a
 * string "14.20"; date "2017-11-16"; time "22:31:08.123456"; timestamp
 * "2017-11-16T22:31:08.123456" (+ "+00:00" for timestamptz; 9 digits for _ns);
 * string as a string; uuid canonical; fixed/binary as a hex string "000102ff".
 *
 * Invariant of ice_value: bytes-typed values (string, binary, fixed, uuid,
 * decimal) keep their payload in `bytes` (owned, NULL when empty); all others in
 * the union `v`.  A decimal's bytes are always minimal two's complement.
 */
#include "iceberg/model_int.h"

#include "base/mem.h"
#include "base/numfmt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ---------------------------------------------------------------- ice_kv */

const char *ice_kv_get(const ice_kv *kv, const char *key)
{
    for (int i = 0; kv && i < kv->n; i++)
        if (strcmp(kv->keys[i], key) == 0)
            return kv->values[i];
    return NULL;
}

hs_status ice_kv_set(ice_kv *kv, const char *key, const char *value)
{
    for (int i = 0; i < kv->n; i++) {
        if (strcmp(kv->keys[i], key) == 0) {
            char *v = hs_strdup(value);
            if (!v)
                return HS_NOMEM;
            hs_free(kv->values[i]);
            kv->values[i] = v;
            return HS_OK;
        }
    }
    char **k2 = hs_realloc(kv->keys, sizeof(char *) * (kv->n + 1));
    if (!k2)
        return HS_NOMEM;
    kv->keys = k2;
    char **v2 = hs_realloc(kv->values, sizeof(char *) * (kv->n + 1));
    if (!v2)
        return HS_NOMEM;
    kv->values = v2;
    char *k = hs_strdup(key), *v = hs_strdup(value);
    if (!k || !v) {
        hs_free(k);
        hs_free(v);
        return HS_NOMEM;
    }
    kv->keys[kv->n] = k;
    kv->values[kv->n] = v;
    kv->n++;
    return HS_OK;
}

bool ice_kv_remove(ice_kv *kv, const char *key)
{
    for (int i = 0; i < kv->n; i++) {
        if (strcmp(kv->keys[i], key) == 0) {
            hs_free(kv->keys[i]);
            hs_free(kv->values[i]);
            memmove(kv->keys + i, kv->keys + i + 1, sizeof(char *) * (kv->n - i - 1));
            memmove(kv->values + i, kv->values + i + 1, sizeof(char *) * (kv->n - i - 1));
            kv->n--;
            return true;
        }
    }
    return false;
}

void ice_kv_clear(ice_kv *kv)
{
    if (!kv)
        return;
    for (int i = 0; i < kv->n; i++) {
        hs_free(kv->keys[i]);
        hs_free(kv->values[i]);
    }
    hs_free(kv->keys);
    hs_free(kv->values);
    memset(kv, 0, sizeof *kv);
}

hs_status ice_kv_copy(const ice_kv *src, ice_kv *dst)
{
    memset(dst, 0, sizeof *dst);
    for (int i = 0; src && i < src->n; i++) {
        if (ice_kv_set(dst, src->keys[i], src->values[i]) != HS_OK) {
            ice_kv_clear(dst);
            return HS_NOMEM;
        }
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ types */

ice_type_id ice_type_of(const hs_field *f)
{
    switch (f->type) {
    case HS_TYPE_NA: return ICE_T_UNKNOWN;
    case HS_TYPE_BOOL: return ICE_T_BOOLEAN;
    case HS_TYPE_INT32: return ICE_T_INT;
    case HS_TYPE_INT64: return ICE_T_LONG;
    case HS_TYPE_FLOAT32: return ICE_T_FLOAT;
    case HS_TYPE_FLOAT64: return ICE_T_DOUBLE;
    case HS_TYPE_DECIMAL128: return ICE_T_DECIMAL;
    case HS_TYPE_DATE32: return ICE_T_DATE;
    case HS_TYPE_TIME64: return f->unit == HS_UNIT_MICRO ? ICE_T_TIME : ICE_T_INVALID;
    case HS_TYPE_TIMESTAMP:
        if (f->unit == HS_UNIT_MICRO)
            return f->tz ? ICE_T_TIMESTAMPTZ : ICE_T_TIMESTAMP;
        if (f->unit == HS_UNIT_NANO)
            return f->tz ? ICE_T_TIMESTAMPTZ_NS : ICE_T_TIMESTAMP_NS;
        return ICE_T_INVALID;
    case HS_TYPE_STRING: return ICE_T_STRING;
    case HS_TYPE_BINARY: return ICE_T_BINARY;
    case HS_TYPE_FIXED_BINARY:
        return (f->ext == HS_EXT_UUID && f->width == 16) ? ICE_T_UUID : ICE_T_FIXED;
    case HS_TYPE_STRUCT: return ICE_T_STRUCT;
    case HS_TYPE_LIST: return ICE_T_LIST;
    case HS_TYPE_MAP: return ICE_T_MAP;
    default: return ICE_T_INVALID;
    }
}

bool ice_type_is_primitive(ice_type_id t)
{
    return t != ICE_T_INVALID && t != ICE_T_STRUCT && t != ICE_T_LIST && t != ICE_T_MAP;
}

static const char *const k_type_names[] = {
    [ICE_T_BOOLEAN] = "boolean", [ICE_T_INT] = "int", [ICE_T_LONG] = "long",
    [ICE_T_FLOAT] = "float", [ICE_T_DOUBLE] = "double", [ICE_T_DATE] = "date",
    [ICE_T_TIME] = "time", [ICE_T_TIMESTAMP] = "timestamp", [ICE_T_TIMESTAMPTZ] = "timestamptz",
    [ICE_T_TIMESTAMP_NS] = "timestamp_ns", [ICE_T_TIMESTAMPTZ_NS] = "timestamptz_ns",
    [ICE_T_STRING] = "string", [ICE_T_UUID] = "uuid", [ICE_T_BINARY] = "binary",
    [ICE_T_UNKNOWN] = "unknown", [ICE_T_STRUCT] = "struct", [ICE_T_LIST] = "list",
    [ICE_T_MAP] = "map",
};

hs_status ice_type_to_string(const hs_field *f, hs_buf *out)
{
    ice_type_id t = ice_type_of(f);
    if (t == ICE_T_DECIMAL)
        return hs_buf_printf(out, "decimal(%d, %d)", (int)f->precision, (int)f->scale);
    if (t == ICE_T_FIXED)
        return hs_buf_printf(out, "fixed[%d]", (int)f->width);
    if (t == ICE_T_INVALID)
        return hs_buf_printf(out, "<not an iceberg type: %s>", hs_type_name(f->type));
    return hs_buf_puts(out, k_type_names[t]);
}

hs_status ice_field_set_type(hs_field *f, ice_type_id t, int32_t precision, int32_t scale,
                             int32_t width)
{
    hs_free(f->tz);
    f->tz = NULL;
    f->ext = HS_EXT_NONE;
    f->precision = f->scale = f->width = 0;
    f->unit = HS_UNIT_SECOND;
    switch (t) {
    case ICE_T_BOOLEAN: f->type = HS_TYPE_BOOL; break;
    case ICE_T_INT: f->type = HS_TYPE_INT32; break;
    case ICE_T_LONG: f->type = HS_TYPE_INT64; break;
    case ICE_T_FLOAT: f->type = HS_TYPE_FLOAT32; break;
    case ICE_T_DOUBLE: f->type = HS_TYPE_FLOAT64; break;
    case ICE_T_DECIMAL:
        f->type = HS_TYPE_DECIMAL128;
        f->precision = precision;
        f->scale = scale;
        break;
    case ICE_T_DATE: f->type = HS_TYPE_DATE32; break;
    case ICE_T_TIME: f->type = HS_TYPE_TIME64; f->unit = HS_UNIT_MICRO; break;
    case ICE_T_TIMESTAMP: f->type = HS_TYPE_TIMESTAMP; f->unit = HS_UNIT_MICRO; break;
    case ICE_T_TIMESTAMP_NS: f->type = HS_TYPE_TIMESTAMP; f->unit = HS_UNIT_NANO; break;
    case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMPTZ_NS:
        f->type = HS_TYPE_TIMESTAMP;
        f->unit = t == ICE_T_TIMESTAMPTZ ? HS_UNIT_MICRO : HS_UNIT_NANO;
        f->tz = hs_strdup("UTC");
        if (!f->tz)
            return HS_NOMEM;
        break;
    case ICE_T_STRING: f->type = HS_TYPE_STRING; break;
    case ICE_T_UUID:
        f->type = HS_TYPE_FIXED_BINARY;
        f->width = 16;
        f->ext = HS_EXT_UUID;
        break;
    case ICE_T_FIXED: f->type = HS_TYPE_FIXED_BINARY; f->width = width; break;
    case ICE_T_BINARY: f->type = HS_TYPE_BINARY; break;
    case ICE_T_STRUCT: f->type = HS_TYPE_STRUCT; break;
    case ICE_T_LIST: f->type = HS_TYPE_LIST; break;
    case ICE_T_MAP: f->type = HS_TYPE_MAP; break;
    default: f->type = HS_TYPE_NA; break;
    }
    return HS_OK;
}

hs_status ice_type_parse(const char *s, hs_field *f, hs_error *err)
{
    int p, sc, w, used = 0;
    if (sscanf(s, "decimal(%d ,%d )%n", &p, &sc, &used) == 2 && used > 0 && s[used] == '\0') {
        if (p < 1 || p > 38 || sc < 0 || sc > p)
            return hs_err_set(err, HS_INVALID, "type \"%s\": decimal precision must be 1..38 "
                                               "and scale 0..precision", s);
        return ice_field_set_type(f, ICE_T_DECIMAL, p, sc, 0) ? hs_err_nomem(err, 4) : HS_OK;
    }
    used = 0;
    if (sscanf(s, "fixed[%d]%n", &w, &used) == 1 && used > 0 && s[used] == '\0') {
        if (w < 1)
            return hs_err_set(err, HS_INVALID, "type \"%s\": fixed length must be positive", s);
        return ice_field_set_type(f, ICE_T_FIXED, 0, 0, w) ? hs_err_nomem(err, 4) : HS_OK;
    }
    for (int t = ICE_T_BOOLEAN; t <= ICE_T_UNKNOWN; t++) {
        if (k_type_names[t] && strcmp(k_type_names[t], s) == 0)
            return ice_field_set_type(f, (ice_type_id)t, 0, 0, 0) ? hs_err_nomem(err, 4) : HS_OK;
    }
    return hs_err_set(err, HS_INVALID, "unknown Iceberg type \"%s\"", s);
}

/* --------------------------------------------------------------- calendar */

int64_t ice_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void ice_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

void ice_fmt_date(int64_t days, char out[32])
{
    int64_t y;
    unsigned m, d;
    ice_civil_from_days(days, &y, &m, &d);
    if (y >= 0 && y <= 9999)
        snprintf(out, 32, "%04lld-%02u-%02u", (long long)y, m, d);
    else
        snprintf(out, 32, "%+05lld-%02u-%02u", (long long)y, m, d);
}

static char *put2(char *o, int v)
{
    *o++ = (char)('0' + v / 10 % 10);
    *o++ = (char)('0' + v % 10);
    return o;
}

static char *put_frac(char *o, int64_t nanos, int digits)
{
    *o++ = '.';
    int64_t div = 100000000;
    for (int i = 0; i < digits; i++, div /= 10)
        *o++ = (char)('0' + (int)(nanos / div % 10));
    return o;
}

void ice_fmt_time(int64_t nanos_of_day, int frac_digits, char out[40])
{
    nanos_of_day = ice_floor_mod(nanos_of_day, 86400000000000LL);
    int64_t secs = nanos_of_day / 1000000000, nanos = nanos_of_day % 1000000000;
    int h = (int)(secs / 3600), mi = (int)(secs / 60 % 60), s = (int)(secs % 60);
    char *o = out;
    o = put2(o, h);
    *o++ = ':';
    o = put2(o, mi);
    if (frac_digits >= 0) {
        *o++ = ':';
        o = put2(o, s);
        if (frac_digits > 0)
            o = put_frac(o, nanos, frac_digits > 9 ? 9 : frac_digits);
    } else if (s > 0 || nanos > 0) { /* java.time.LocalTime.toString */
        *o++ = ':';
        o = put2(o, s);
        if (nanos > 0)
            o = put_frac(o, nanos, nanos % 1000000 == 0 ? 3 : nanos % 1000 == 0 ? 6 : 9);
    }
    *o = '\0';
}

void ice_fmt_timestamp(int64_t v, bool nanos, int frac_digits, char out[80])
{
    int64_t per_day = nanos ? 86400000000000LL : 86400000000LL;
    int64_t days = ice_floor_div(v, per_day);
    int64_t rem = v - days * per_day;
    char d[32], t[40];
    ice_fmt_date(days, d);
    ice_fmt_time(nanos ? rem : rem * 1000, frac_digits, t);
    snprintf(out, 80, "%sT%s", d, t);
}

hs_status ice_base64_append(hs_buf *out, const uint8_t *p, size_t n)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    HS_TRY(hs_buf_reserve(out, (n + 2) / 3 * 4 + 1));
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        char q[4] = {tbl[(v >> 18) & 63], tbl[(v >> 12) & 63], i + 1 < n ? tbl[(v >> 6) & 63] : '=',
                     i + 2 < n ? tbl[v & 63] : '='};
        HS_TRY(hs_buf_append(out, q, 4));
    }
    return HS_OK;
}

hs_status ice_decimal_append(hs_buf *out, __int128 unscaled, int32_t scale)
{
    char digits[64];
    int n = 0;
    bool neg = unscaled < 0;
    unsigned __int128 u = neg ? (unsigned __int128)0 - (unsigned __int128)unscaled
                              : (unsigned __int128)unscaled;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (n <= scale)
        digits[n++] = '0';
    if (neg)
        HS_TRY(hs_buf_append_byte(out, '-'));
    for (int i = n - 1; i >= 0; i--) {
        HS_TRY(hs_buf_append_byte(out, (uint8_t)digits[i]));
        if (i == scale && scale > 0)
            HS_TRY(hs_buf_append_byte(out, '.'));
    }
    return HS_OK;
}

void ice_fmt_uuid(const uint8_t b[16], char out[37])
{
    static const char hx[] = "0123456789abcdef";
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hx[b[i] >> 4];
        out[o++] = hx[b[i] & 15];
    }
    out[o] = '\0';
}

/* ----------------------------------------------------- random identifiers */

static void random_bytes(void *p, size_t n)
{
    uint8_t *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(b + got, n - got, 0);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    if (got < n) { /* no entropy source: fall back to time-seeded mixing */
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32) ^ (uintptr_t)p;
        for (size_t i = got; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (uint8_t)x;
        }
    }
}

int64_t ice_new_snapshot_id(void)
{
    uint64_t v = 0;
    while (v == 0) {
        random_bytes(&v, sizeof v);
        v &= (uint64_t)INT64_MAX;
    }
    return (int64_t)v;
}

void ice_uuid_v4(char out[37])
{
    uint8_t b[16];
    random_bytes(b, sizeof b);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    ice_fmt_uuid(b, out);
}

int64_t ice_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- values */

void ice_value_clear(ice_value *v)
{
    if (!v)
        return;
    hs_free(v->bytes);
    memset(v, 0, sizeof *v);
}

hs_status ice_value_copy(const ice_value *src, ice_value *dst)
{
    ice_value tmp = *src;
    tmp.bytes = NULL;
    if (src->len) {
        tmp.bytes = hs_malloc(src->len);
        if (!tmp.bytes)
            return HS_NOMEM;
        memcpy(tmp.bytes, src->bytes, src->len);
    }
    *dst = tmp;
    return HS_OK;
}

void ice_value_init_null(ice_value *v, const hs_field *f)
{
    memset(v, 0, sizeof *v);
    v->type = ice_type_of(f);
    v->is_null = true;
    v->precision = f->precision;
    v->scale = f->scale;
    v->width = f->width;
}

void ice_value_set_int(ice_value *v, ice_type_id t, int64_t x)
{
    hs_free(v->bytes);
    memset(v, 0, sizeof *v);
    v->type = t;
    if (t == ICE_T_BOOLEAN)
        v->v.b = x != 0;
    else if (t == ICE_T_FLOAT)
        v->v.f = (float)x;
    else if (t == ICE_T_DOUBLE)
        v->v.d = (double)x;
    else
        v->v.i = x;
}

hs_status ice_value_set_bytes(ice_value *v, ice_type_id t, const void *p, size_t n)
{
    if (n > UINT32_MAX)
        return HS_INVALID;
    uint8_t *b = NULL;
    if (n) {
        b = hs_malloc(n);
        if (!b)
            return HS_NOMEM;
        memcpy(b, p, n);
    }
    int32_t prec = v->precision, scale = v->scale;
    hs_free(v->bytes);
    memset(v, 0, sizeof *v);
    v->type = t;
    v->bytes = b;
    v->len = (uint32_t)n;
    if (t == ICE_T_FIXED || t == ICE_T_UUID)
        v->width = (int32_t)n;
    if (t == ICE_T_DECIMAL) { /* keep decimal params a caller set before */
        v->precision = prec;
        v->scale = scale;
    }
    return HS_OK;
}

/* Minimal big-endian two's complement of x into out (16 bytes of room); returns length. */
int ice_decimal_to_be(__int128 x, uint8_t out[16])
{
    uint8_t b[16];
    unsigned __int128 u = (unsigned __int128)x;
    for (int i = 15; i >= 0; i--) {
        b[i] = (uint8_t)u;
        u >>= 8;
    }
    int start = 0;
    while (start < 15 && ((b[start] == 0x00 && !(b[start + 1] & 0x80)) ||
                          (b[start] == 0xff && (b[start + 1] & 0x80))))
        start++;
    memcpy(out, b + start, 16 - start);
    return 16 - start;
}

static __int128 decimal_from_be(const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    unsigned __int128 u = (p[0] & 0x80) ? ~(unsigned __int128)0 : 0;
    for (size_t i = 0; i < n; i++)
        u = (u << 8) | p[i];
    return (__int128)u;
}

hs_status ice_value_set_decimal(ice_value *v, __int128 unscaled, int32_t precision, int32_t scale)
{
    uint8_t b[16];
    int n = ice_decimal_to_be(unscaled, b);
    v->precision = precision;
    v->scale = scale;
    HS_TRY(ice_value_set_bytes(v, ICE_T_DECIMAL, b, (size_t)n));
    return HS_OK;
}

__int128 ice_value_decimal(const ice_value *v)
{
    return decimal_from_be(v->bytes, v->len > 16 ? 16 : v->len);
}

hs_status ice_value_to_bytes(const ice_value *v, hs_buf *out)
{
    if (v->is_null)
        return HS_OK;
    switch (v->type) {
    case ICE_T_BOOLEAN: return hs_buf_append_byte(out, v->v.b ? 1 : 0);
    case ICE_T_INT:
    case ICE_T_DATE: return hs_buf_put_u32le(out, (uint32_t)(int32_t)v->v.i);
    case ICE_T_LONG:
    case ICE_T_TIME:
    case ICE_T_TIMESTAMP:
    case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMP_NS:
    case ICE_T_TIMESTAMPTZ_NS: return hs_buf_put_u64le(out, (uint64_t)v->v.i);
    case ICE_T_FLOAT: {
        uint32_t u;
        memcpy(&u, &v->v.f, 4);
        return hs_buf_put_u32le(out, u);
    }
    case ICE_T_DOUBLE: {
        uint64_t u;
        memcpy(&u, &v->v.d, 8);
        return hs_buf_put_u64le(out, u);
    }
    case ICE_T_DECIMAL: {
        uint8_t b[16];
        int n = ice_decimal_to_be(ice_value_decimal(v), b); /* re-minimise */
        return hs_buf_append(out, b, (size_t)n);
    }
    case ICE_T_STRING:
    case ICE_T_BINARY:
    case ICE_T_FIXED:
    case ICE_T_UUID: return v->len ? hs_buf_append(out, v->bytes, v->len) : HS_OK;
    default: return HS_OK;
    }
}

static uint64_t le_u(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

hs_status ice_value_from_bytes(const hs_field *f, const uint8_t *p, size_t n, ice_value *out,
                               hs_error *err)
{
    ice_type_id t = ice_type_of(f);
    ice_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.precision = f->precision;
    v.scale = f->scale;
    v.width = f->width;
    const char *name = f->name ? f->name : "?";
    switch (t) {
    case ICE_T_BOOLEAN:
        if (n != 1)
            goto badlen;
        v.v.b = p[0] != 0;
        break;
    case ICE_T_INT:
    case ICE_T_DATE:
        if (n != 4)
            goto badlen;
        v.v.i = (int32_t)(uint32_t)le_u(p, 4);
        break;
    case ICE_T_LONG:
    case ICE_T_TIME:
    case ICE_T_TIMESTAMP:
    case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMP_NS:
    case ICE_T_TIMESTAMPTZ_NS:
        if (n == 8)
            v.v.i = (int64_t)le_u(p, 8);
        else if (n == 4 && t == ICE_T_LONG) /* written before int -> long promotion */
            v.v.i = (int32_t)(uint32_t)le_u(p, 4);
        else
            goto badlen;
        break;
    case ICE_T_FLOAT: {
        if (n != 4)
            goto badlen;
        uint32_t u = (uint32_t)le_u(p, 4);
        memcpy(&v.v.f, &u, 4);
        break;
    }
    case ICE_T_DOUBLE: {
        if (n == 8) {
            uint64_t u = le_u(p, 8);
            memcpy(&v.v.d, &u, 8);
        } else if (n == 4) { /* written before float -> double promotion */
            uint32_t u = (uint32_t)le_u(p, 4);
            float fl;
            memcpy(&fl, &u, 4);
            v.v.d = fl;
        } else {
            goto badlen;
        }
        break;
    }
    case ICE_T_DECIMAL:
        if (n < 1 || n > 16)
            goto badlen;
        if (ice_value_set_decimal(&v, decimal_from_be(p, n), f->precision, f->scale))
            return hs_err_nomem(err, n);
        break;
    case ICE_T_UUID:
        if (n != 16)
            goto badlen;
        goto bytes;
    case ICE_T_FIXED:
        if ((int64_t)n != f->width)
            goto badlen;
        goto bytes;
    case ICE_T_STRING:
    case ICE_T_BINARY:
    bytes:
        if (ice_value_set_bytes(&v, t, p, n))
            return hs_err_nomem(err, n);
        v.width = f->width;
        break;
    default:
        return hs_err_set(err, HS_UNSUPPORTED, "column %s: no single-value serialization for %s",
                          name, hs_type_name(f->type));
    }
    *out = v;
    return HS_OK;
badlen:
    return HS_CORRUPT_AT(err, "column %s: %zu-byte value is not a valid %s", name, n,
                         t == ICE_T_DECIMAL ? "decimal" : t == ICE_T_FIXED ? "fixed"
                                                                              : k_type_names[t]);
}

/* ------------------------------------------------------------ JSON values */

hs_status ice_json_nomem(hs_error *err) { return hs_err_set(err, HS_NOMEM, "out of memory building JSON"); }

typedef struct dump_ctx {
    hs_buf *out;
    bool failed;
} dump_ctx;

static int dump_cb(const char *p, size_t n, void *ctx)
{
    dump_ctx *d = ctx;
    /* jansson ignores some callback failures: remember them ourselves */
    if (d->failed || hs_buf_append(d->out, p, n) != HS_OK) {
        d->failed = true;
        return -1;
    }
    return 0;
}

hs_status ice_json_dump(const json_t *j, hs_buf *out, bool pretty)
{
    size_t flags = JSON_ENCODE_ANY | JSON_REAL_PRECISION(17);
    flags |= pretty ? JSON_INDENT(2) : JSON_COMPACT;
    size_t start = out->len;
    dump_ctx d = {out, false};
    if (hs_json_dump_callback(j, dump_cb, &d, flags) != 0 || d.failed) {
        out->len = start;
        return HS_NOMEM;
    }
    return HS_OK;
}

static const char hexdig[] = "0123456789abcdef";

json_t *ice_value_to_jansson(const ice_value *v)
{
    char b[96];
    if (v->is_null)
        return json_null();
    switch (v->type) {
    case ICE_T_BOOLEAN: return json_boolean(v->v.b);
    case ICE_T_INT:
    case ICE_T_LONG: return json_integer(v->v.i);
    case ICE_T_FLOAT:
    case ICE_T_DOUBLE: {
        double d = v->type == ICE_T_FLOAT ? (double)v->v.f : v->v.d;
        if (isnan(d))
            return json_string("NaN");
        if (isinf(d))
            return json_string(d > 0 ? "Infinity" : "-Infinity");
        if (v->type == ICE_T_FLOAT) { /* shortest text that reads back as the float */
            for (int prec = 6; prec <= 9; prec++) {
                hs_snprintf_c(b, sizeof b, "%.*g", prec, d);
                if (hs_strtof(b, NULL) == v->v.f)
                    break;
            }
            return json_real(hs_strtod(b, NULL));
        }
        return json_real(d);
    }
    case ICE_T_DATE: ice_fmt_date(v->v.i, b); return json_string(b);
    case ICE_T_TIME: {
        char t[40];
        ice_fmt_time(v->v.i * 1000, 6, t);
        return json_string(t);
    }
    case ICE_T_TIMESTAMP:
    case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMP_NS:
    case ICE_T_TIMESTAMPTZ_NS: {
        bool ns = v->type == ICE_T_TIMESTAMP_NS || v->type == ICE_T_TIMESTAMPTZ_NS;
        ice_fmt_timestamp(v->v.i, ns, ns ? 9 : 6, b);
        if (v->type == ICE_T_TIMESTAMPTZ || v->type == ICE_T_TIMESTAMPTZ_NS)
            strcat(b, "+00:00");
        return json_string(b);
    }
    case ICE_T_STRING: return json_stringn((const char *)(v->bytes ? v->bytes : (uint8_t *)""), v->len);
    case ICE_T_UUID: {
        if (v->len != 16)
            return json_null();
        ice_fmt_uuid(v->bytes, b);
        return json_string(b);
    }
    case ICE_T_BINARY:
    case ICE_T_FIXED: {
        char *h = hs_malloc((size_t)v->len * 2 + 1);
        if (!h)
            return NULL;
        for (uint32_t i = 0; i < v->len; i++) {
            h[2 * i] = hexdig[v->bytes[i] >> 4];
            h[2 * i + 1] = hexdig[v->bytes[i] & 15];
        }
        h[(size_t)v->len * 2] = '\0';
        json_t *j = json_string(h);
        hs_free(h);
        return j;
    }
    case ICE_T_DECIMAL: {
        hs_buf buf = {0};
        if (ice_decimal_append(&buf, ice_value_decimal(v), v->scale) != HS_OK) {
            hs_buf_free(&buf);
            return NULL;
        }
        json_t *j = json_string(hs_buf_cstr(&buf));
        hs_buf_free(&buf);
        return j;
    }
    default: return json_null();
    }
}

hs_status ice_value_to_json(const ice_value *v, hs_buf *out)
{
    json_t *j = ice_value_to_jansson(v);
    if (!j)
        return HS_NOMEM;
    hs_status s = ice_json_dump(j, out, false);
    json_decref(j);
    return s;
}

/* Parses up to `max` decimal digits exactly `n` long; -1 on failure. */
static int64_t parse_digits(const char **pp, int n)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*pp)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *pp += n;
    return v;
}

static bool parse_date(const char **pp, int64_t *days)
{
    const char *p = *pp;
    bool neg = false;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    int ylen = 0;
    while (p[ylen] >= '0' && p[ylen] <= '9')
        ylen++;
    if (ylen < 4 || ylen > 9)
        return false;
    int64_t y = parse_digits(&p, ylen);
    if (*p++ != '-')
        return false;
    int64_t m = parse_digits(&p, 2);
    if (m < 1 || m > 12 || *p++ != '-')
        return false;
    int64_t d = parse_digits(&p, 2);
    if (d < 1 || d > 31)
        return false;
    *days = ice_days_from_civil(neg ? -y : y, (unsigned)m, (unsigned)d);
    *pp = p;
    return true;
}

/* "HH:MM[:SS[.fffffffff]]" -> nanos of day. */
static bool parse_time(const char **pp, int64_t *nanos)
{
    const char *p = *pp;
    int64_t h = parse_digits(&p, 2);
    if (h < 0 || h > 23 || *p++ != ':')
        return false;
    int64_t mi = parse_digits(&p, 2), s = 0, frac = 0;
    if (mi < 0 || mi > 59)
        return false;
    if (*p == ':') {
        p++;
        s = parse_digits(&p, 2);
        if (s < 0 || s > 59)
            return false;
        if (*p == '.') {
            p++;
            int nd = 0;
            while (*p >= '0' && *p <= '9') {
                if (nd < 9) {
                    frac = frac * 10 + (*p - '0');
                    nd++;
                }
                p++;
            }
            if (nd == 0)
                return false;
            for (; nd < 9; nd++)
                frac *= 10;
        }
    }
    *nanos = ((h * 60 + mi) * 60 + s) * 1000000000LL + frac;
    *pp = p;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

hs_status ice_value_from_jansson(const hs_field *f, const json_t *j, ice_value *out, hs_error *err)
{
    ice_type_id t = ice_type_of(f);
    const char *name = f->name ? f->name : "?";
    ice_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.precision = f->precision;
    v.scale = f->scale;
    v.width = f->width;
    if (json_is_null(j)) {
        v.is_null = true;
        *out = v;
        return HS_OK;
    }
    const char *s = json_is_string(j) ? json_string_value(j) : NULL;
    switch (t) {
    case ICE_T_BOOLEAN:
        if (!json_is_boolean(j))
            goto bad;
        v.v.b = json_is_true(j);
        break;
    case ICE_T_INT:
    case ICE_T_LONG:
        if (!json_is_integer(j))
            goto bad;
        v.v.i = json_integer_value(j);
        if (t == ICE_T_INT && (v.v.i < INT32_MIN || v.v.i > INT32_MAX))
            goto bad;
        break;
    case ICE_T_FLOAT:
    case ICE_T_DOUBLE: {
        double d;
        if (json_is_number(j))
            d = json_number_value(j);
        else if (s && strcmp(s, "NaN") == 0)
            d = NAN;
        else if (s && strcmp(s, "Infinity") == 0)
            d = INFINITY;
        else if (s && strcmp(s, "-Infinity") == 0)
            d = -INFINITY;
        else
            goto bad;
        if (t == ICE_T_FLOAT)
            v.v.f = (float)d;
        else
            v.v.d = d;
        break;
    }
    case ICE_T_DATE: {
        const char *p = s;
        int64_t days;
        if (!s || !parse_date(&p, &days) || *p)
            goto bad;
        v.v.i = days;
        break;
    }
    case ICE_T_TIME: {
        const char *p = s;
        int64_t ns;
        if (!s || !parse_time(&p, &ns) || *p)
            goto bad;
        v.v.i = ns / 1000;
        break;
    }
    case ICE_T_TIMESTAMP:
    case ICE_T_TIMESTAMPTZ:
    case ICE_T_TIMESTAMP_NS:
    case ICE_T_TIMESTAMPTZ_NS: {
        const char *p = s;
        int64_t days, ns, off_min = 0;
        if (!s || !parse_date(&p, &days) || (*p != 'T' && *p != ' '))
            goto bad;
        p++;
        if (!parse_time(&p, &ns))
            goto bad;
        if (*p == 'Z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p == '-' ? -1 : 1;
            p++;
            int64_t oh = parse_digits(&p, 2);
            if (oh < 0 || *p++ != ':')
                goto bad;
            int64_t om = parse_digits(&p, 2);
            if (om < 0)
                goto bad;
            off_min = sign * (oh * 60 + om);
        }
        if (*p)
            goto bad;
        int64_t total_ns_day = ns - off_min * 60 * 1000000000LL;
        if (t == ICE_T_TIMESTAMP_NS || t == ICE_T_TIMESTAMPTZ_NS)
            v.v.i = days * 86400000000000LL + total_ns_day;
        else
            v.v.i = days * 86400000000LL + ice_floor_div(total_ns_day, 1000);
        break;
    }
    case ICE_T_STRING:
        if (!s)
            goto bad;
        if (ice_value_set_bytes(&v, t, s, json_string_length(j)))
            return hs_err_nomem(err, json_string_length(j));
        break;
    case ICE_T_UUID: {
        uint8_t b[16];
        int k = 0;
        if (!s)
            goto bad;
        for (const char *p = s; *p; p++) {
            if (*p == '-')
                continue;
            int hi = hexval(p[0]), lo = p[1] ? hexval(p[1]) : -1;
            if (hi < 0 || lo < 0 || k >= 16)
                goto bad;
            b[k++] = (uint8_t)(hi << 4 | lo);
            p++;
        }
        if (k != 16)
            goto bad;
        if (ice_value_set_bytes(&v, t, b, 16))
            return hs_err_nomem(err, 16);
        break;
    }
    case ICE_T_BINARY:
    case ICE_T_FIXED: {
        if (!s)
            goto bad;
        size_t n = json_string_length(j);
        if (n % 2)
            goto bad;
        uint8_t *b = hs_malloc(n / 2 + 1);
        if (!b)
            return hs_err_nomem(err, n);
        for (size_t i = 0; i < n / 2; i++) {
            int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                hs_free(b);
                goto bad;
            }
            b[i] = (uint8_t)(hi << 4 | lo);
        }
        if (t == ICE_T_FIXED && (int64_t)(n / 2) != f->width) {
            hs_free(b);
            goto bad;
        }
        hs_status st = ice_value_set_bytes(&v, t, b, n / 2);
        hs_free(b);
        if (st)
            return hs_err_nomem(err, n);
        break;
    }
    case ICE_T_DECIMAL: {
        if (!s)
            goto bad;
        const char *p = s;
        bool neg = false;
        if (*p == '-' || *p == '+')
            neg = *p++ == '-';
        __int128 u = 0;
        int ndig = 0, frac = -1;
        for (; *p; p++) {
            if (*p == '.' && frac < 0) {
                frac = 0;
                continue;
            }
            if (*p < '0' || *p > '9' || ndig >= 38)
                goto bad;
            u = u * 10 + (*p - '0');
            ndig++;
            if (frac >= 0)
                frac++;
        }
        if (ndig == 0)
            goto bad;
        if (frac < 0)
            frac = 0;
        if (frac > f->scale)
            goto bad;
        for (; frac < f->scale; frac++) {
            if (ndig++ >= 38)
                goto bad;
            u *= 10;
        }
        if (ice_value_set_decimal(&v, neg ? -u : u, f->precision, f->scale))
            return hs_err_nomem(err, 16);
        break;
    }
    default:
        return hs_err_set(err, HS_UNSUPPORTED, "column %s: no single-value JSON form for %s", name,
                          hs_type_name(f->type));
    }
    *out = v;
    return HS_OK;
bad: {
    hs_buf tb = {0};
    char *text = hs_json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    if (ice_type_to_string(f, &tb) != HS_OK)
        hs_buf_reset(&tb);
    hs_err_set(err, HS_INVALID, "column %s: %.80s is not a valid %s value", name,
               text ? text : "?", tb.len ? hs_buf_cstr(&tb) : "?");
    free(text);
    hs_buf_free(&tb);
    return HS_INVALID;
}
}

hs_status ice_value_from_json(const hs_field *f, const char *json, size_t len, ice_value *out,
                              hs_error *err)
{
    json_error_t je;
    json_t *j = hs_json_loadb(json, len, JSON_DECODE_ANY, &je);
    if (!j)
        return hs_err_set(err, HS_INVALID, "value JSON: %s (line %d)", je.text, je.line);
    hs_status s = ice_value_from_jansson(f, j, out, err);
    json_decref(j);
    return s;
}

/* ----------------------------------------------------- values of columns */

hs_status ice_value_from_column(const hs_field *f, const hs_column *c, int64_t row,
                                ice_value *out, hs_error *err)
{
    if (row < 0 || row >= c->length)
        return hs_err_set(err, HS_INVALID, "row %lld out of range (column has %lld)",
                          (long long)row, (long long)c->length);
    ice_type_id t = ice_type_of(f);
    if (!ice_type_is_primitive(t))
        return hs_err_set(err, HS_INVALID, "column %s: not an Iceberg primitive (%s)", f->name,
                          hs_type_name(f->type));
    if (!hs_col_is_valid(c, row) || t == ICE_T_UNKNOWN) {
        ice_value_init_null(out, f);
        return HS_OK;
    }
    ice_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.precision = f->precision;
    v.scale = f->scale;
    v.width = f->width;
    switch (t) {
    case ICE_T_BOOLEAN: v.v.b = hs_bit_get(c->values.data, row); break;
    case ICE_T_INT:
    case ICE_T_DATE: v.v.i = HS_COL_VALUES(c, int32_t)[row]; break;
    case ICE_T_FLOAT: v.v.f = HS_COL_VALUES(c, float)[row]; break;
    case ICE_T_DOUBLE: v.v.d = HS_COL_VALUES(c, double)[row]; break;
    case ICE_T_DECIMAL: {
        const uint8_t *p = c->values.data + row * 16;
        unsigned __int128 u = 0;
        for (int i = 15; i >= 0; i--)
            u = (u << 8) | p[i];
        if (ice_value_set_decimal(&v, (__int128)u, f->precision, f->scale))
            return hs_err_nomem(err, 16);
        break;
    }
    case ICE_T_STRING:
    case ICE_T_BINARY: {
        const int32_t *o = HS_COL_OFFSETS(c);
        if (ice_value_set_bytes(&v, t, c->values.data + o[row], (size_t)(o[row + 1] - o[row])))
            return hs_err_nomem(err, (size_t)(o[row + 1] - o[row]));
        break;
    }
    case ICE_T_UUID:
    case ICE_T_FIXED:
        if (ice_value_set_bytes(&v, t, c->values.data + row * c->width, (size_t)c->width))
            return hs_err_nomem(err, (size_t)c->width);
        break;
    default: v.v.i = HS_COL_VALUES(c, int64_t)[row]; break;
    }
    *out = v;
    return HS_OK;
}

/* ------------------------------------------------------------ comparison */

static int cmp_bytes(const ice_value *a, const ice_value *b)
{
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->bytes, b->bytes, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a->len < b->len ? -1 : a->len > b->len;
}

int ice_value_compare(const ice_value *a, const ice_value *b)
{
    if (a->is_null || b->is_null)
        return (int)!a->is_null - (int)!b->is_null;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    switch (a->type) {
    case ICE_T_BOOLEAN: return (int)a->v.b - (int)b->v.b;
    case ICE_T_FLOAT: {
        int32_t x, y;
        memcpy(&x, &a->v.f, 4);
        memcpy(&y, &b->v.f, 4);
        x ^= (x >> 31) & 0x7fffffff;
        y ^= (y >> 31) & 0x7fffffff;
        return x < y ? -1 : x > y;
    }
    case ICE_T_DOUBLE: {
        int64_t x, y;
        memcpy(&x, &a->v.d, 8);
        memcpy(&y, &b->v.d, 8);
        x ^= (x >> 63) & INT64_MAX;
        y ^= (y >> 63) & INT64_MAX;
        return x < y ? -1 : x > y;
    }
    case ICE_T_DECIMAL: {
        __int128 x = ice_value_decimal(a), y = ice_value_decimal(b);
        return x < y ? -1 : x > y;
    }
    case ICE_T_STRING:
    case ICE_T_BINARY:
    case ICE_T_FIXED:
    case ICE_T_UUID: return cmp_bytes(a, b);
    case ICE_T_UNKNOWN: return 0;
    default: return a->v.i < b->v.i ? -1 : a->v.i > b->v.i;
    }
}

bool ice_value_equals(const ice_value *a, const ice_value *b)
{
    return a->type == b->type && ice_value_compare(a, b) == 0;
}

/* ------------------------------------------------------ bound truncation */

/* Byte length of the first `n` code points of UTF-8 text s (whole text if shorter). */
static size_t utf8_prefix(const uint8_t *s, size_t len, int n)
{
    size_t i = 0;
    for (int cp = 0; cp < n && i < len; cp++) {
        i++;
        while (i < len && (s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

/* Decodes the code point starting at s[i] (lenient); sets *adv. */
static uint32_t utf8_decode(const uint8_t *s, size_t len, size_t i, size_t *adv)
{
    uint8_t c = s[i];
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    uint32_t cp = extra == 3 ? c & 7 : extra == 2 ? c & 15 : extra == 1 ? c & 31 : c;
    size_t k = 1;
    for (; k <= (size_t)extra && i + k < len && (s[i + k] & 0xC0) == 0x80; k++)
        cp = cp << 6 | (s[i + k] & 0x3F);
    *adv = k;
    return cp;
}

static int utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 63));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 63));
        out[2] = (uint8_t)(0x80 | (cp & 63));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 63));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 63));
    out[3] = (uint8_t)(0x80 | (cp & 63));
    return 4;
}

hs_status ice_value_truncate_lower(const ice_value *v, int len, ice_value *out)
{
    if (v->is_null || (v->type != ICE_T_STRING && v->type != ICE_T_BINARY))
        return ice_value_copy(v, out);
    size_t n = v->type == ICE_T_STRING ? utf8_prefix(v->bytes, v->len, len)
                                       : (v->len < (uint32_t)len ? v->len : (size_t)len);
    memset(out, 0, sizeof *out);
    return ice_value_set_bytes(out, v->type, v->bytes, n);
}

hs_status ice_value_truncate_upper(const ice_value *v, int len, ice_value *out, bool *ok)
{
    *ok = true;
    if (v->is_null || (v->type != ICE_T_STRING && v->type != ICE_T_BINARY))
        return ice_value_copy(v, out);
    memset(out, 0, sizeof *out);
    out->type = v->type;
    if (v->type == ICE_T_BINARY) {
        if (v->len <= (uint32_t)len)
            return ice_value_set_bytes(out, v->type, v->bytes, v->len);
        for (int i = len - 1; i >= 0; i--) {
            if (v->bytes[i] != 0xFF) {
                HS_TRY(ice_value_set_bytes(out, v->type, v->bytes, (size_t)i + 1));
                out->bytes[i]++;
                return HS_OK;
            }
        }
        *ok = false;
        out->is_null = true;
        return HS_OK;
    }
    size_t n = utf8_prefix(v->bytes, v->len, len);
    if (n >= v->len)
        return ice_value_set_bytes(out, v->type, v->bytes, v->len);
    /* Increment the last code point of the prefix; if it is already the
     * largest one, drop it and try the one before (Java's truncateStringMax). */
    while (n > 0) {
        size_t start = n - 1, adv;
        while (start > 0 && (v->bytes[start] & 0xC0) == 0x80)
            start--;
        uint32_t cp = utf8_decode(v->bytes, n, start, &adv) + 1;
        if (cp >= 0xD800 && cp <= 0xDFFF)
            cp = 0xE000;
        if (cp <= 0x10FFFF) {
            uint8_t enc[4];
            int el = utf8_encode(cp, enc);
            uint8_t *b = hs_malloc(start + (size_t)el);
            if (!b)
                return HS_NOMEM;
            memcpy(b, v->bytes, start);
            memcpy(b + start, enc, (size_t)el);
            out->bytes = b;
            out->len = (uint32_t)(start + (size_t)el);
            return HS_OK;
        }
        n = start;
    }
    *ok = false;
    out->is_null = true;
    return HS_OK;
}
