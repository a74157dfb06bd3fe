/*
 * columnar/ingest.c - JSON Lines and CSV text into column batches, schema
 * inference, and the type grammar of hs_field_format.
 *
 * Pipeline:
 *
 *   hs_file --1 MiB chunks--> record reader --> [inference sample] --> batch
 *             (rd_*)          JSONL: one line     JSONL: json_t *    put_json /
 *                             CSV: RFC 4180 cells CSV: cell text     put_text
 *
 * Record readers.  JSONL: a line is bytes up to '\n' (a trailing '\r' is
 * dropped; blank lines are skipped) parsed with jansson (json_loadb, any
 * value, NUL allowed).  jansson stores integers as long long and rejects
 * larger ones, so when a line fails to parse, integer tokens beyond int64 are
 * rewritten as strings and the line is parsed again: integer columns accept
 * decimal strings, so uint64 values up to 2^64-1 load exactly.  CSV: a state
 * machine over bytes (start / unquoted / quoted / quote-in-quoted), fields
 * separated by ',', records by LF or CRLF, '""' inside quotes is one quote,
 * newlines inside quotes are data.  The first record is the header.  A cell
 * keeps whether it was quoted: an unquoted empty cell is null, a quoted empty
 * cell is the empty string (null for non-string columns).
 *
 * Values.  put_json() reads one JSON value into a column by the column's type
 * (the inverse of jsonl.c's encoding); strings reaching a scalar non-string
 * column go through put_text(), which parses text by type and is also how
 * CSV cells load.  CSV cells of nested columns are parsed as JSON.  On a bad
 * value the functions record a reason in ig->why and the column path in
 * ig->path, and the row function formats "<input>:<line>: column "<path>":
 * <reason>".
 *
 * Inference: an inf node per column (and per nested key / array element)
 * accumulates the set of JSON kinds seen (null, bool, int, real, string,
 * object, array).  Resolution: {int} -> int64, {int, real} -> double, {bool}
 * -> bool, {string} -> string, {object} -> struct of the keys in first-seen
 * order, {array} -> list of the merged element, nothing but nulls -> string,
 * any other mix -> string (non-string values keep their JSON text).  Every
 * inferred column is nullable: rows after the sample may hold nulls.
 */
#include "columnar/ingest.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/jsonl.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RD_CHUNK (1u << 20)

/* ------------------------------------------------------------------ */
/* sequential reader over an hs_file                                    */

typedef struct rd {
    hs_file *f;
    uint64_t off;      /* file offset of buf[end] */
    uint8_t *buf;
    size_t pos, end;
    bool eof;
} rd;

static hs_status rd_fill(rd *r, hs_error *err)
{
    if (r->pos < r->end || r->eof)
        return HS_OK;
    uint64_t left = r->f->size - r->off;
    size_t n = left < RD_CHUNK ? (size_t)left : RD_CHUNK;
    r->pos = r->end = 0;
    if (n == 0) {
        r->eof = true;
        return HS_OK;
    }
    HS_TRY(hs_file_read_at(r->f, r->off, n, r->buf, err));
    r->off += n;
    r->end = n;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* inference nodes                                                      */

enum { K_NULL = 1, K_BOOL = 2, K_INT = 4, K_REAL = 8, K_STR = 16, K_OBJ = 32, K_ARR = 64 };

typedef struct inf inf;
struct inf {
    char *name;
    unsigned kinds;
    int n_kids, cap_kids;
    inf *kids;
    inf *elem;
};

static void inf_clear(inf *n)
{
    for (int i = 0; i < n->n_kids; i++)
        inf_clear(&n->kids[i]);
    hs_free(n->kids);
    if (n->elem) {
        inf_clear(n->elem);
        hs_free(n->elem);
    }
    hs_free(n->name);
    memset(n, 0, sizeof *n);
}

static inf *inf_kid(inf *n, const char *name)
{
    for (int i = 0; i < n->n_kids; i++)
        if (strcmp(n->kids[i].name, name) == 0)
            return &n->kids[i];
    if (n->n_kids == n->cap_kids) {
        int cap = n->cap_kids ? n->cap_kids * 2 : 8;
        inf *k = hs_realloc(n->kids, sizeof(inf) * (size_t)cap);
        if (!k)
            return NULL;
        n->kids = k;
        n->cap_kids = cap;
    }
    inf *k = &n->kids[n->n_kids];
    memset(k, 0, sizeof *k);
    k->name = hs_strdup(name);
    if (!k->name)
        return NULL;
    n->n_kids++;
    return k;
}

static hs_status inf_json(inf *n, json_t *v, int depth)
{
    if (depth > 64)
        return HS_INVALID;
    switch (json_typeof(v)) {
    case JSON_NULL: n->kinds |= K_NULL; return HS_OK;
    case JSON_TRUE:
    case JSON_FALSE: n->kinds |= K_BOOL; return HS_OK;
    case JSON_INTEGER: n->kinds |= K_INT; return HS_OK;
    case JSON_REAL: n->kinds |= K_REAL; return HS_OK;
    case JSON_STRING: {
        /* The JSON Lines encoding writes non-finite floats as strings. */
        const char *s = json_string_value(v);
        if (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0)
            n->kinds |= K_REAL;
        else
            n->kinds |= K_STR;
        return HS_OK;
    }
    case JSON_OBJECT: {
        const char *key;
        json_t *val;
        n->kinds |= K_OBJ;
        json_object_foreach(v, key, val) {
            inf *k = inf_kid(n, key);
            if (!k)
                return HS_NOMEM;
            HS_TRY(inf_json(k, val, depth + 1));
        }
        return HS_OK;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *val;
        n->kinds |= K_ARR;
        if (!n->elem) {
            n->elem = hs_calloc(1, sizeof(inf));
            if (!n->elem || !(n->elem->name = hs_strdup("element")))
                return HS_NOMEM;
        }
        json_array_foreach(v, i, val) HS_TRY(inf_json(n->elem, val, depth + 1));
        return HS_OK;
    }
    }
    return HS_OK;
}

static bool parse_i64(const char *s, size_t n, int64_t *out);
static bool parse_double(const char *s, size_t n, double *out);

static void inf_text(inf *n, const char *s, size_t len, bool quoted)
{
    int64_t i;
    double d;
    if (len == 0 && !quoted)
        n->kinds |= K_NULL;
    else if (parse_i64(s, len, &i))
        n->kinds |= K_INT;
    else if (parse_double(s, len, &d))
        n->kinds |= K_REAL;
    else if ((len == 4 && strncmp(s, "true", 4) == 0) || (len == 5 && strncmp(s, "false", 5) == 0))
        n->kinds |= K_BOOL;
    else
        n->kinds |= K_STR;
}

static hs_status inf_resolve(const inf *n, hs_field *out)
{
    unsigned k = n->kinds & ~(unsigned)K_NULL;
    hs_type t = HS_TYPE_STRING;
    if (k == K_BOOL)
        t = HS_TYPE_BOOL;
    else if (k == K_INT)
        t = HS_TYPE_INT64;
    else if (k == K_REAL || k == (K_INT | K_REAL))
        t = HS_TYPE_FLOAT64;
    else if (k == K_OBJ && n->n_kids > 0)
        t = HS_TYPE_STRUCT;
    else if (k == K_ARR)
        t = HS_TYPE_LIST;
    hs_field_init(out, n->name, t, true);
    if (!out->name)
        return HS_NOMEM;
    if (t == HS_TYPE_STRUCT) {
        for (int i = 0; i < n->n_kids; i++) {
            hs_field kid;
            HS_TRY(inf_resolve(&n->kids[i], &kid));
            HS_TRY(hs_field_add_child(out, &kid));
        }
    } else if (t == HS_TYPE_LIST) {
        hs_field el;
        if (n->elem) {
            HS_TRY(inf_resolve(n->elem, &el));
        } else {
            hs_field_init(&el, "element", HS_TYPE_STRING, true);
        }
        HS_TRY(hs_field_add_child(out, &el));
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* the reader state                                                     */

typedef struct cell { size_t off, len; bool quoted; } cell;
typedef struct sample_rec { json_t *json; size_t first_cell; int n_cells; int64_t line; } sample_rec;

struct hs_ingest {
    hs_ingest_format format;
    rd in;
    char *name;
    hs_field schema;
    int64_t batch_rows, infer_rows;
    int64_t line;            /* lines consumed so far */
    int64_t rec_line;        /* line where the current record starts (1-based) */
    int64_t rows;            /* rows emitted */
    hs_buf line_buf;         /* JSONL: current line; CSV: current record's cell bytes */
    hs_buf cells;            /* CSV: cell[] of the current record */
    hs_buf rewrite;          /* JSONL: line with big integers quoted */
    int n_header;
    int *csv_col;            /* header cell -> schema column, or -1 */
    /* inference sample, replayed before reading on */
    sample_rec *sample;
    int64_t n_sample, sample_pos;
    hs_buf sample_bytes;     /* CSV cell bytes of the sample */
    hs_buf sample_cells;     /* CSV cell[] of the sample */
    /* error context */
    hs_buf path;
    char why[320];
    bool text_from_json;     /* put_text called on a JSON string (for messages) */
    hs_buf tmp;
};

static hs_status why(hs_ingest *ig, const char *fmt, ...) HS_PRINTF(2, 3);
static hs_status why(hs_ingest *ig, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ig->why, sizeof ig->why, fmt, ap);
    va_end(ap);
    return HS_INVALID;
}

/* Short printable form of a value for messages: string "x", number 1.5, object. */
static void describe_json(json_t *v, char *dst, size_t cap)
{
    switch (json_typeof(v)) {
    case JSON_STRING: {
        size_t n = json_string_length(v);
        snprintf(dst, cap, "string \"%.*s%s\"", (int)(n > 40 ? 40 : n), json_string_value(v),
                 n > 40 ? "..." : "");
        for (char *p = dst; *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        return;
    }
    case JSON_INTEGER: snprintf(dst, cap, "number %lld", (long long)json_integer_value(v)); return;
    case JSON_REAL: hs_snprintf_c(dst, cap, "number %.17g", json_real_value(v)); return;
    case JSON_TRUE: snprintf(dst, cap, "true"); return;
    case JSON_FALSE: snprintf(dst, cap, "false"); return;
    case JSON_NULL: snprintf(dst, cap, "null"); return;
    case JSON_OBJECT: snprintf(dst, cap, "an object"); return;
    case JSON_ARRAY: snprintf(dst, cap, "an array"); return;
    }
}

static hs_status type_text(const hs_field *f, char *dst, size_t cap)
{
    hs_buf b = {0};
    hs_status st = hs_field_format(f, &b);
    snprintf(dst, cap, "%s", st == HS_OK && b.data ? (const char *)hs_buf_cstr(&b) : hs_type_name(f->type));
    hs_buf_free(&b);
    return HS_OK;
}

static hs_status expected_json(hs_ingest *ig, const hs_field *f, json_t *v)
{
    char t[96], got[96];
    (void)type_text(f, t, sizeof t);
    describe_json(v, got, sizeof got);
    return why(ig, "expected %s, got %s", t, got);
}

static hs_status expected_text(hs_ingest *ig, const hs_field *f, const char *s, size_t n,
                               const char *detail)
{
    char t[96];
    (void)type_text(f, t, sizeof t);
    return why(ig, "expected %s, got %s\"%.*s%s\"%s%s", t, ig->text_from_json ? "string " : "",
               (int)(n > 40 ? 40 : n), s,
               n > 40 ? "..." : "", detail ? ": " : "", detail ? detail : "");
}

/* ------------------------------------------------------------------ */
/* text parsers (strict: the whole text must be consumed)               */

static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    size_t i = 0;
    uint64_t v = 0;
    if (i < n && s[i] == '+')
        i++;
    if (i == n)
        return false;
    for (; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool parse_i64(const char *s, size_t n, int64_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    uint64_t u;
    if (neg ? (n < 2 || s[1] == '+') : false)
        return false;
    if (!parse_u64(s + neg, n - neg, &u))
        return false;
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1)
            return false;
        *out = (int64_t)(0 - u);
    } else {
        if (u > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)u;
    }
    return true;
}

static bool parse_double(const char *s, size_t n, double *out)
{
    char tmp[128];
    if (n == 0 || n >= sizeof tmp)
        return false;
    if (n == 3 && memcmp(s, "NaN", 3) == 0) { *out = NAN; return true; }
    if (n == 8 && memcmp(s, "Infinity", 8) == 0) { *out = INFINITY; return true; }
    if (n == 9 && memcmp(s, "-Infinity", 9) == 0) { *out = -INFINITY; return true; }
    /* Plain decimal syntax only (strtod also takes hex, "inf", "nan"). */
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789+-.eE", s[i]))
            return false;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    errno = 0;
    double d = hs_strtod(tmp, &end);
    if (end != tmp + n)
        return false;
    *out = d;
    return true;
}

static bool parse_float(const char *s, size_t n, float *out)
{
    char tmp[128];
    double d;
    if (!parse_double(s, n, &d))
        return false;
    if (isnan(d) || isinf(d)) {
        *out = (float)d;
        return true;
    }
    memcpy(tmp, s, n); /* strtof: correctly rounded, no double rounding */
    tmp[n] = 0;
    *out = hs_strtof(tmp, NULL);
    return true;
}

static bool digits(const char *s, size_t n, size_t at, int count, int *out)
{
    int v = 0;
    if (at + (size_t)count > n)
        return false;
    for (int i = 0; i < count; i++) {
        unsigned d = (unsigned)(s[at + i] - '0');
        if (d > 9)
            return false;
        v = v * 10 + (int)d;
    }
    *out = v;
    return true;
}

static bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* [+-]YYYY-MM-DD (4 or more year digits); *used = bytes consumed. */
static bool parse_date_prefix(const char *s, size_t n, int64_t *days, size_t *used)
{
    static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    int64_t y = 0;
    size_t y0 = i;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - y0 < 9)
        y = y * 10 + (s[i++] - '0');
    if (i - y0 < 4 || i >= n || s[i] != '-')
        return false;
    int m, d;
    if (!digits(s, n, i + 1, 2, &m) || i + 3 >= n || s[i + 3] != '-' || !digits(s, n, i + 4, 2, &d))
        return false;
    if (neg)
        y = -y;
    if (m < 1 || m > 12 || d < 1 || (unsigned)d > mdays[m - 1] + (m == 2 && leap(y)))
        return false;
    *days = hs_days_from_civil(y, (unsigned)m, (unsigned)d);
    *used = i + 6;
    return true;
}

static const int64_t ups_of[4] = {1, 1000, 1000000, 1000000000};

/* HH:MM[:SS[.f{1,9}]] -> count of unit; extra nonzero fraction digits are an error. */
static bool parse_time_prefix(const char *s, size_t n, hs_time_unit unit, int64_t *out, size_t *used)
{
    int h, m, sec = 0;
    if (!digits(s, n, 0, 2, &h) || n < 5 || s[2] != ':' || !digits(s, n, 3, 2, &m))
        return false;
    size_t i = 5;
    if (i < n && s[i] == ':') {
        if (!digits(s, n, i + 1, 2, &sec))
            return false;
        i += 3;
    }
    if (h > 23 || m > 59 || sec > 59)
        return false;
    int64_t frac_ns = 0;
    if (i < n && s[i] == '.') {
        i++;
        size_t f0 = i;
        int64_t scale = 100000000;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (i - f0 >= 9) {
                if (s[i] != '0')
                    return false;
            } else {
                frac_ns += (s[i] - '0') * scale;
                scale /= 10;
            }
            i++;
        }
        if (i == f0)
            return false;
    }
    int64_t ns_per_unit = 1000000000 / ups_of[unit];
    if (frac_ns % ns_per_unit != 0)
        return false; /* more precision than the column holds */
    *out = ((int64_t)h * 3600 + m * 60 + sec) * ups_of[unit] + frac_ns / ns_per_unit;
    *used = i;
    return true;
}

static bool parse_date(const char *s, size_t n, int64_t *days)
{
    size_t used;
    return parse_date_prefix(s, n, days, &used) && used == n;
}

static bool parse_time(const char *s, size_t n, hs_time_unit unit, int64_t *v)
{
    size_t used;
    return parse_time_prefix(s, n, unit, v, &used) && used == n;
}

/* date[(T| )time][Z|(+|-)HH[:]MM] -> UTC instant in unit */
static bool parse_timestamp(const char *s, size_t n, hs_time_unit unit, int64_t *out)
{
    int64_t days, tod = 0, offset_min = 0;
    size_t used, i;
    if (!parse_date_prefix(s, n, &days, &used))
        return false;
    i = used;
    if (i < n && (s[i] == 'T' || s[i] == 't' || s[i] == ' ')) {
        if (!parse_time_prefix(s + i + 1, n - i - 1, unit, &tod, &used))
            return false;
        i += 1 + used;
    }
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int oh, om;
        bool neg = s[i] == '-';
        if (!digits(s, n, i + 1, 2, &oh))
            return false;
        i += 3;
        if (i < n && s[i] == ':')
            i++;
        if (!digits(s, n, i, 2, &om))
            return false;
        i += 2;
        offset_min = (neg ? -1 : 1) * (oh * 60 + om);
    }
    if (i != n)
        return false;
    int64_t upd = ups_of[unit] * 86400, v;
    if (__builtin_mul_overflow(days, upd, &v) || __builtin_add_overflow(v, tod, &v) ||
        __builtin_sub_overflow(v, offset_min * 60 * ups_of[unit], &v))
        return false;
    *out = v;
    return true;
}

/* "-12.340" -> 16-byte little-endian unscaled integer with `scale` digits. */
static bool parse_decimal(const char *s, size_t n, int precision, int scale, uint8_t out[16],
                          const char **detail)
{
    size_t i = 0;
    bool neg = false;
    unsigned __int128 v = 0;
    const unsigned __int128 lim = (((unsigned __int128)1) << 127) - 1;
    int ndig = 0, frac = 0;
    bool seen_point = false, any = false;
    *detail = NULL;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    for (; i < n; i++) {
        char c = s[i];
        if (c == '.' && !seen_point) {
            seen_point = true;
            continue;
        }
        if (c < '0' || c > '9')
            return false;
        any = true;
        if (seen_point) {
            if (frac >= scale) {
                if (c != '0') {
                    *detail = "more decimal places than the scale";
                    return false;
                }
                continue;
            }
            frac++;
        }
        if (v > (lim - 9) / 10)
            return false;
        v = v * 10 + (unsigned)(c - '0');
        if (v)
            ndig++;
    }
    if (!any)
        return false;
    for (; frac < scale; frac++) {
        if (v > lim / 10)
            return false;
        v *= 10;
        if (v)
            ndig++;
    }
    if (scale < 0) { /* value must be a multiple of 10^-scale */
        for (int k = 0; k < -scale; k++) {
            if (v % 10) {
                *detail = "not a multiple of the (negative) scale";
                return false;
            }
            v /= 10;
        }
    }
    unsigned __int128 t = v;
    int nd = 0;
    while (t) {
        nd++;
        t /= 10;
    }
    if (precision > 0 && nd > precision) {
        *detail = "more digits than the precision";
        return false;
    }
    if (neg)
        v = ~v + 1;
    for (int k = 0; k < 16; k++) {
        out[k] = (uint8_t)v;
        v >>= 8;
    }
    return true;
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

/* Standard (or URL-safe) base64, padding optional; appends to out. */
static bool base64_decode(const char *s, size_t n, hs_buf *out)
{
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return false;
    if (hs_buf_reserve(out, n / 4 * 3 + 3) != HS_OK)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_val((unsigned char)s[i]);
        if (v < 0)
            return false;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out->data[out->len++] = (uint8_t)(acc >> bits);
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* values into columns                                                  */

static hs_status path_push(hs_ingest *ig, const char *name)
{
    if (ig->path.len)
        HS_TRY(hs_buf_append_byte(&ig->path, '.'));
    return hs_buf_puts(&ig->path, name);
}

static hs_status put_json(hs_ingest *ig, const hs_field *f, hs_column *c, json_t *v, int depth);

static hs_status put_int(hs_ingest *ig, const hs_field *f, hs_column *c, int64_t sv, uint64_t uv,
                         bool is_unsigned, const char *text, size_t n)
{
    /* The value is sv (signed form) or uv when is_unsigned (above INT64_MAX). */
    bool ok = true;
    union { int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64; } u;
    switch (f->type) {
    case HS_TYPE_INT8: ok = !is_unsigned && sv >= INT8_MIN && sv <= INT8_MAX; u.i8 = (int8_t)sv; break;
    case HS_TYPE_INT16: ok = !is_unsigned && sv >= INT16_MIN && sv <= INT16_MAX; u.i16 = (int16_t)sv; break;
    case HS_TYPE_INT32: ok = !is_unsigned && sv >= INT32_MIN && sv <= INT32_MAX; u.i32 = (int32_t)sv; break;
    case HS_TYPE_INT64: ok = !is_unsigned; u.i64 = sv; break;
    case HS_TYPE_UINT8: ok = !is_unsigned && sv >= 0 && sv <= UINT8_MAX; u.u8 = (uint8_t)sv; break;
    case HS_TYPE_UINT16: ok = !is_unsigned && sv >= 0 && sv <= UINT16_MAX; u.u16 = (uint16_t)sv; break;
    case HS_TYPE_UINT32: ok = !is_unsigned && sv >= 0 && sv <= UINT32_MAX; u.u32 = (uint32_t)sv; break;
    case HS_TYPE_UINT64: ok = is_unsigned || sv >= 0; u.u64 = is_unsigned ? uv : (uint64_t)sv; break;
    default: ok = false;
    }
    if (!ok)
        return expected_text(ig, f, text, n, "out of range");
    return hs_col_append_fixed(c, &u);
}

/* Scalar value from text (CSV cells; JSON strings in non-string columns). */
static hs_status put_text(hs_ingest *ig, const hs_field *f, hs_column *c, const char *s, size_t n,
                          int depth)
{
    switch (f->type) {
    case HS_TYPE_BOOL: {
        uint8_t b;
        if ((n == 4 && strncmp(s, "true", 4) == 0) || (n == 1 && s[0] == '1'))
            b = 1;
        else if ((n == 5 && strncmp(s, "false", 5) == 0) || (n == 1 && s[0] == '0'))
            b = 0;
        else
            return expected_text(ig, f, s, n, NULL);
        return hs_col_append_fixed(c, &b);
    }
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32: case HS_TYPE_UINT64: {
        int64_t sv;
        uint64_t uv;
        if (parse_i64(s, n, &sv))
            return put_int(ig, f, c, sv, 0, false, s, n);
        if (parse_u64(s, n, &uv))
            return put_int(ig, f, c, 0, uv, true, s, n);
        return expected_text(ig, f, s, n, NULL);
    }
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: {
        double d;
        float fl;
        if (f->type == HS_TYPE_FLOAT64) {
            if (!parse_double(s, n, &d))
                return expected_text(ig, f, s, n, NULL);
            return hs_col_append_fixed(c, &d);
        }
        if (!parse_float(s, n, &fl))
            return expected_text(ig, f, s, n, NULL);
        if (f->type == HS_TYPE_FLOAT32)
            return hs_col_append_fixed(c, &fl);
        uint16_t h = hs_float_to_half(fl);
        return hs_col_append_fixed(c, &h);
    }
    case HS_TYPE_DECIMAL128: {
        uint8_t v[16];
        const char *detail;
        if (!parse_decimal(s, n, f->precision, f->scale, v, &detail))
            return expected_text(ig, f, s, n, detail);
        return hs_col_append_fixed(c, v);
    }
    case HS_TYPE_DATE32: {
        int64_t d;
        if (!parse_date(s, n, &d) || d < INT32_MIN || d > INT32_MAX)
            return expected_text(ig, f, s, n, "dates are YYYY-MM-DD");
        int32_t d32 = (int32_t)d;
        return hs_col_append_fixed(c, &d32);
    }
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: {
        int64_t t;
        if (!parse_time(s, n, f->unit, &t))
            return expected_text(ig, f, s, n, "times are HH:MM:SS[.fraction]");
        if (f->type == HS_TYPE_TIME32) {
            int32_t t32 = (int32_t)t;
            return hs_col_append_fixed(c, &t32);
        }
        return hs_col_append_fixed(c, &t);
    }
    case HS_TYPE_TIMESTAMP: {
        int64_t t;
        if (!parse_timestamp(s, n, f->unit, &t))
            return expected_text(ig, f, s, n, "timestamps are YYYY-MM-DDTHH:MM:SS[.fraction][Z]");
        return hs_col_append_fixed(c, &t);
    }
    case HS_TYPE_STRING: {
        /* Arrow strings are UTF-8: CSV bytes that are not cannot become one
         * (JSON text is checked by the JSON parser already) */
        size_t ok = hs_utf8_valid_prefix((const uint8_t *)s, n);
        if (ok < n)
            return why(ig, "expected string, got bytes that are not UTF-8 (at byte %zu of the "
                       "value)", ok);
        return hs_col_append_bytes(c, s, n);
    }
    case HS_TYPE_BINARY: {
        hs_buf_reset(&ig->tmp);
        if (!base64_decode(s, n, &ig->tmp))
            return expected_text(ig, f, s, n, "binary values are base64");
        return hs_col_append_bytes(c, ig->tmp.data, ig->tmp.len);
    }
    case HS_TYPE_FIXED_BINARY: {
        if (f->ext == HS_EXT_UUID && f->width == 16) {
            uint8_t u[16];
            if (!hs_uuid_parse(s, n, u))
                return expected_text(ig, f, s, n, NULL);
            return hs_col_append_bytes(c, u, 16);
        }
        hs_buf_reset(&ig->tmp);
        if (!base64_decode(s, n, &ig->tmp))
            return expected_text(ig, f, s, n, "binary values are base64");
        if (ig->tmp.len != (size_t)f->width) {
            char d[64];
            snprintf(d, sizeof d, "%zu bytes, the column holds %d", ig->tmp.len, f->width);
            return expected_text(ig, f, s, n, d);
        }
        return hs_col_append_bytes(c, ig->tmp.data, ig->tmp.len);
    }
    case HS_TYPE_LIST: case HS_TYPE_FIXED_LIST: case HS_TYPE_STRUCT: case HS_TYPE_MAP: {
        /* Nested values in CSV cells are JSON text. */
        json_error_t jerr;
        json_t *v = hs_json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!v)
            return expected_text(ig, f, s, n, "nested values in CSV are JSON");
        hs_status st = put_json(ig, f, c, v, depth);
        json_decref(v);
        return st;
    }
    default:
        return expected_text(ig, f, s, n, NULL);
    }
}

static hs_status put_json_text(hs_ingest *ig, const hs_field *f, hs_column *c, json_t *v, int depth)
{
    ig->text_from_json = true;
    hs_status st = put_text(ig, f, c, json_string_value(v), json_string_length(v), depth);
    ig->text_from_json = false;
    return st;
}

static hs_status put_struct(hs_ingest *ig, const hs_field *f, hs_column *c, json_t *obj, int depth)
{
    size_t mark = ig->path.len;
    size_t matched = 0;
    for (int i = 0; i < f->n_children; i++) {
        const hs_field *cf = &f->children[i];
        json_t *v = json_object_get(obj, cf->name);
        if (v)
            matched++;
        HS_TRY(path_push(ig, cf->name));
        if (!v && !cf->nullable)
            return why(ig, "missing value for a non-nullable field");
        HS_TRY(put_json(ig, cf, c->children[i], v, depth + 1));
        ig->path.len = mark;
    }
    if (matched < json_object_size(obj)) {
        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v) {
            bool known = false;
            for (int i = 0; i < f->n_children && !known; i++)
                known = strcmp(f->children[i].name, key) == 0;
            if (!known) {
                HS_TRY(path_push(ig, key));
                return why(ig, "not in the schema");
            }
        }
    }
    return hs_col_struct_append_valid(c);
}

static hs_status put_map_entry(hs_ingest *ig, const hs_field *ef, hs_column *ec, json_t *key,
                               const char *key_text, json_t *val, int depth)
{
    size_t mark = ig->path.len;
    HS_TRY(path_push(ig, "key"));
    if (key)
        HS_TRY(put_json(ig, &ef->children[0], ec->children[0], key, depth + 1));
    else
        HS_TRY(put_text(ig, &ef->children[0], ec->children[0], key_text, strlen(key_text), depth + 1));
    ig->path.len = mark;
    if (ef->n_children > 1) {
        HS_TRY(path_push(ig, "value"));
        HS_TRY(put_json(ig, &ef->children[1], ec->children[1], val, depth + 1));
        ig->path.len = mark;
    }
    return hs_col_struct_append_valid(ec);
}

static hs_status put_json(hs_ingest *ig, const hs_field *f, hs_column *c, json_t *v, int depth)
{
    if (depth > 64)
        return why(ig, "nesting deeper than 64 levels");
    if (!v || json_is_null(v)) {
        if (!f->nullable)
            return why(ig, "null in a non-nullable column");
        return hs_col_append_null(c);
    }
    switch (f->type) {
    case HS_TYPE_NA:
        return expected_json(ig, f, v);
    case HS_TYPE_BOOL:
        if (json_is_boolean(v)) {
            uint8_t b = json_is_true(v);
            return hs_col_append_fixed(c, &b);
        }
        if (json_is_string(v))
            return put_json_text(ig, f, c, v, depth);
        return expected_json(ig, f, v);
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32: case HS_TYPE_UINT64:
        if (json_is_integer(v)) {
            char t[32];
            int64_t sv = (int64_t)json_integer_value(v);
            int n = snprintf(t, sizeof t, "%lld", (long long)sv);
            return put_int(ig, f, c, sv, 0, false, t, (size_t)n);
        }
        if (json_is_string(v)) /* big integers arrive quoted (see the header comment) */
            return put_json_text(ig, f, c, v, depth);
        return expected_json(ig, f, v);
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: {
        double d;
        if (json_is_integer(v))
            d = (double)json_integer_value(v);
        else if (json_is_real(v))
            d = json_real_value(v);
        else if (json_is_string(v))
            return put_json_text(ig, f, c, v, depth);
        else
            return expected_json(ig, f, v);
        if (f->type == HS_TYPE_FLOAT64)
            return hs_col_append_fixed(c, &d);
        float fl = (float)d;
        if (f->type == HS_TYPE_FLOAT32)
            return hs_col_append_fixed(c, &fl);
        uint16_t h = hs_float_to_half(fl);
        return hs_col_append_fixed(c, &h);
    }
    case HS_TYPE_DECIMAL128: {
        char t[96];
        int n;
        if (json_is_string(v))
            return put_json_text(ig, f, c, v, depth);
        if (json_is_integer(v))
            n = snprintf(t, sizeof t, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v) && isfinite(json_real_value(v)) && fabs(json_real_value(v)) < 1e30)
            n = hs_snprintf_c(t, sizeof t, "%.*f", f->scale > 0 && f->scale < 40 ? f->scale : 0,
                         json_real_value(v));
        else
            return expected_json(ig, f, v);
        return put_text(ig, f, c, t, (size_t)n, depth);
    }
    case HS_TYPE_DATE32: case HS_TYPE_TIME32: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP:
        if (json_is_string(v))
            return put_json_text(ig, f, c, v, depth);
        if (json_is_integer(v)) { /* raw count of days / units */
            int64_t x = (int64_t)json_integer_value(v);
            if (f->type == HS_TYPE_DATE32 || f->type == HS_TYPE_TIME32) {
                if (x < INT32_MIN || x > INT32_MAX)
                    return expected_json(ig, f, v);
                int32_t x32 = (int32_t)x;
                return hs_col_append_fixed(c, &x32);
            }
            return hs_col_append_fixed(c, &x);
        }
        return expected_json(ig, f, v);
    case HS_TYPE_STRING:
        if (json_is_string(v))
            return hs_col_append_bytes(c, json_string_value(v), json_string_length(v));
        else {
            /* A mixed column inferred as string keeps other values' JSON text. */
            char *text = hs_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            if (!text)
                return HS_NOMEM;
            hs_status st = hs_col_append_bytes(c, text, strlen(text));
            free(text);
            return st;
        }
    case HS_TYPE_BINARY: case HS_TYPE_FIXED_BINARY:
        if (json_is_string(v))
            return put_json_text(ig, f, c, v, depth);
        return expected_json(ig, f, v);
    case HS_TYPE_LIST: case HS_TYPE_FIXED_LIST: {
        if (!json_is_array(v))
            return expected_json(ig, f, v);
        size_t n = json_array_size(v), mark = ig->path.len;
        if (f->type == HS_TYPE_FIXED_LIST && n != (size_t)f->width) {
            char t[96];
            (void)type_text(f, t, sizeof t);
            return why(ig, "expected %s, got an array of %zu values", t, n);
        }
        for (size_t i = 0; i < n; i++) {
            char idx[32];
            snprintf(idx, sizeof idx, "[%zu]", i);
            HS_TRY(hs_buf_puts(&ig->path, idx));
            HS_TRY(put_json(ig, &f->children[0], c->children[0], json_array_get(v, i), depth + 1));
            ig->path.len = mark;
        }
        return hs_col_list_end(c); /* LIST and FIXED_LIST alike */
    }
    case HS_TYPE_STRUCT:
        if (!json_is_object(v))
            return expected_json(ig, f, v);
        return put_struct(ig, f, c, v, depth);
    case HS_TYPE_MAP: {
        const hs_field *ef = &f->children[0];
        hs_column *ec = c->children[0];
        if (json_is_object(v)) { /* {"k": v, ...} shorthand */
            const char *key;
            json_t *val;
            json_object_foreach(v, key, val) HS_TRY(put_map_entry(ig, ef, ec, NULL, key, val, depth));
            return hs_col_list_end(c);
        }
        if (!json_is_array(v))
            return expected_json(ig, f, v);
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            json_t *k = json_is_object(e) ? json_object_get(e, "key") : NULL;
            if (!k || json_is_null(k)) {
                char t[96];
                (void)type_text(f, t, sizeof t);
                return why(ig, "expected %s as an array of {\"key\": .., \"value\": ..} objects "
                               "with non-null keys", t);
            }
            HS_TRY(put_map_entry(ig, ef, ec, k, NULL, json_object_get(e, "value"), depth));
        }
        return hs_col_list_end(c);
    }
    default:
        return why(ig, "unsupported column type %s", hs_type_name(f->type));
    }
}

/* ------------------------------------------------------------------ */
/* records                                                              */

static hs_status row_error(hs_ingest *ig, hs_status st, hs_error *err)
{
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 0);
    if (st != HS_INVALID)
        return hs_err_set(err, st, "%s:%lld: internal error (%s)", ig->name, (long long)ig->rec_line,
                          hs_status_name(st));
    return hs_err_set(err, HS_INVALID, "%s:%lld: column \"%s\": %s", ig->name,
                      (long long)ig->rec_line, hs_buf_cstr(&ig->path), ig->why);
}

/* Quotes integer tokens outside strings that do not fit int64, into ig->rewrite.
 * Returns true if anything changed. */
static bool quote_big_ints(hs_ingest *ig, const char *s, size_t n)
{
    bool changed = false;
    hs_buf_reset(&ig->rewrite);
    if (hs_buf_reserve(&ig->rewrite, n + n / 2 + 16) != HS_OK)
        return false;
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < n && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            j = j < n ? j + 1 : n;
            if (hs_buf_append(&ig->rewrite, s + i, j - i) != HS_OK)
                return false;
            i = j;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i + 1;
            bool integer = true;
            while (j < n && strchr("0123456789+-.eE", s[j])) {
                if (s[j] < '0' || s[j] > '9')
                    integer = false;
                j++;
            }
            int64_t tmp;
            bool big = integer && !parse_i64(s + i, j - i, &tmp);
            if ((big && hs_buf_append_byte(&ig->rewrite, '"') != HS_OK) ||
                hs_buf_append(&ig->rewrite, s + i, j - i) != HS_OK ||
                (big && hs_buf_append_byte(&ig->rewrite, '"') != HS_OK))
                return false;
            changed |= big;
            i = j;
        } else {
            if (hs_buf_append_byte(&ig->rewrite, (uint8_t)c) != HS_OK)
                return false;
            i++;
        }
    }
    return changed;
}

/* Next JSON line into *out (NULL at end); blank lines skipped. */
static hs_status jsonl_next(hs_ingest *ig, json_t **out, hs_error *err)
{
    *out = NULL;
    for (;;) {
        hs_buf_reset(&ig->line_buf);
        bool got = false;
        for (;;) {
            HS_TRY(rd_fill(&ig->in, err));
            if (ig->in.eof)
                break;
            got = true;
            uint8_t *p = ig->in.buf + ig->in.pos;
            size_t avail = ig->in.end - ig->in.pos;
            uint8_t *nl = memchr(p, '\n', avail);
            size_t take = nl ? (size_t)(nl - p) : avail;
            if (hs_buf_append(&ig->line_buf, p, take) != HS_OK)
                return hs_err_nomem(err, take);
            ig->in.pos += take + (nl != NULL);
            if (nl)
                break;
        }
        if (!got)
            return HS_OK;
        ig->line++;
        ig->rec_line = ig->line;
        const char *s = (const char *)ig->line_buf.data;
        size_t n = ig->line_buf.len;
        if (n && s[n - 1] == '\r')
            n--;
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t'))
            k++;
        if (k == n)
            continue;
        json_error_t jerr;
        json_t *v = hs_json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!v && quote_big_ints(ig, s, n)) {
            json_error_t jerr2;
            v = hs_json_loadb((const char *)ig->rewrite.data, ig->rewrite.len,
                           JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr2);
        }
        if (!v)
            return hs_err_set(err, HS_INVALID, "%s:%lld: column %d: invalid JSON: %s", ig->name,
                              (long long)ig->rec_line, jerr.column, jerr.text);
        if (!json_is_object(v)) {
            json_decref(v);
            return hs_err_set(err, HS_INVALID, "%s:%lld: expected a JSON object per line", ig->name,
                              (long long)ig->rec_line);
        }
        *out = v;
        return HS_OK;
    }
}

/* Ends the current cell at the end of line_buf (dropping a '\r' that ended an
 * unquoted last cell of a CRLF record) and starts the next one. */
static hs_status csv_end_cell(hs_ingest *ig, cell *cur, bool strip_cr, int *n_cells)
{
    size_t len = ig->line_buf.len - cur->off;
    if (strip_cr && !cur->quoted && len && ig->line_buf.data[ig->line_buf.len - 1] == '\r')
        len--;
    cur->len = len;
    HS_TRY(hs_buf_append(&ig->cells, cur, sizeof *cur));
    (*n_cells)++;
    *cur = (cell){ig->line_buf.len, 0, false};
    return HS_OK;
}

/* Next CSV record: cells in ig->cells over bytes in ig->line_buf; *n_cells = 0
 * at the end.  Blank lines are skipped. */
static hs_status csv_next(hs_ingest *ig, int *n_cells, hs_error *err)
{
    enum { START, UNQUOTED, QUOTED, QUOTE_IN_QUOTED } state;
    for (;;) {
        hs_buf_reset(&ig->line_buf);
        hs_buf_reset(&ig->cells);
        *n_cells = 0;
        cell cur = {0, 0, false};
        state = START;
        bool any = false, done = false;
        ig->rec_line = ig->line + 1;
        while (!done) {
            HS_TRY(rd_fill(&ig->in, err));
            if (ig->in.eof)
                break;
            any = true;
            uint8_t ch = ig->in.buf[ig->in.pos++];
            hs_status st = HS_OK;
            if (ch == '\n')
                ig->line++;
            switch (state) {
            case START:
            case UNQUOTED:
                if (ch == '"' && state == START) {
                    cur.quoted = true;
                    state = QUOTED;
                } else if (ch == ',' || ch == '\n') {
                    st = csv_end_cell(ig, &cur, ch == '\n', n_cells);
                    state = START;
                    done = ch == '\n';
                } else {
                    st = hs_buf_append_byte(&ig->line_buf, ch);
                    state = UNQUOTED;
                }
                break;
            case QUOTED:
                if (ch == '"')
                    state = QUOTE_IN_QUOTED;
                else
                    st = hs_buf_append_byte(&ig->line_buf, ch);
                break;
            case QUOTE_IN_QUOTED:
                if (ch == '"') {
                    st = hs_buf_append_byte(&ig->line_buf, ch);
                    state = QUOTED;
                } else if (ch == ',' || ch == '\n') {
                    st = csv_end_cell(ig, &cur, false, n_cells);
                    state = START;
                    done = ch == '\n';
                } else if (ch != '\r') { /* '\r' of a CRLF after a closing quote */
                    return hs_err_set(err, HS_INVALID,
                                      "%s:%lld: column %d: unexpected character after a closing quote",
                                      ig->name, (long long)ig->line + 1, *n_cells + 1);
                }
                break;
            }
            if (st != HS_OK)
                return hs_err_nomem(err, 0);
        }
        if (!done) { /* end of input */
            if (!any)
                return HS_OK;
            if (state == QUOTED)
                return hs_err_set(err, HS_INVALID, "%s:%lld: column %d: unterminated quoted field",
                                  ig->name, (long long)ig->rec_line, *n_cells + 1);
            if (csv_end_cell(ig, &cur, true, n_cells) != HS_OK)
                return hs_err_nomem(err, 0);
        }
        const cell *cl = (const cell *)ig->cells.data;
        if (*n_cells == 1 && cl[0].len == 0 && !cl[0].quoted)
            continue; /* blank line */
        return HS_OK;
    }
}

/* ------------------------------------------------------------------ */
/* open / next / close                                                  */

static hs_status put_json_row(hs_ingest *ig, hs_batch *b, json_t *obj, hs_error *err)
{
    const hs_field *s = &ig->schema;
    size_t matched = 0;
    for (int i = 0; i < s->n_children; i++) {
        const hs_field *f = &s->children[i];
        json_t *v = json_object_get(obj, f->name);
        matched += v != NULL;
        hs_buf_reset(&ig->path);
        hs_status st = path_push(ig, f->name);
        if (st == HS_OK && !v && !f->nullable)
            st = why(ig, "missing value for a non-nullable column");
        if (st == HS_OK)
            st = put_json(ig, f, b->cols[i], v, 0);
        if (st != HS_OK)
            return row_error(ig, st, err);
    }
    if (matched < json_object_size(obj)) {
        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v) {
            if (hs_batch_find(b, key) < 0) {
                hs_buf_reset(&ig->path);
                (void)!path_push(ig, key);
                (void)why(ig, "not in the schema%s",
                          ig->infer_rows ? " (inferred from the first rows; give --schema)" : "");
                return row_error(ig, HS_INVALID, err);
            }
        }
    }
    b->n_rows++;
    return HS_OK;
}

static hs_status put_csv_row(hs_ingest *ig, hs_batch *b, const uint8_t *bytes, const cell *cells,
                             int n_cells, hs_error *err)
{
    const hs_field *s = &ig->schema;
    if (n_cells != ig->n_header)
        return hs_err_set(err, HS_INVALID, "%s:%lld: %d fields, the header has %d", ig->name,
                          (long long)ig->rec_line, n_cells, ig->n_header);
    /* Schema columns absent from the header get nulls. */
    for (int i = 0; i < s->n_children; i++) {
        int j;
        for (j = 0; j < n_cells && ig->csv_col[j] != i; j++) {}
        const hs_field *f = &s->children[i];
        hs_buf_reset(&ig->path);
        hs_status st = path_push(ig, f->name);
        if (st == HS_OK) {
            const cell *cl = j < n_cells ? &cells[j] : NULL;
            bool null = !cl || (cl->len == 0 && (!cl->quoted || f->type != HS_TYPE_STRING));
            if (null)
                st = f->nullable ? hs_col_append_null(b->cols[i])
                                 : why(ig, "empty value in a non-nullable column");
            else
                /* (a quoted empty cell may come with no byte buffer at all) */
                st = put_text(ig, f, b->cols[i], cl->len ? (const char *)bytes + cl->off : "",
                              cl->len, 0);
        }
        if (st != HS_OK)
            return row_error(ig, st, err);
    }
    b->n_rows++;
    return HS_OK;
}

static hs_status read_header(hs_ingest *ig, bool infer, hs_error *err)
{
    int n;
    HS_TRY(csv_next(ig, &n, err));
    if (n == 0)
        return hs_err_set(err, HS_INVALID, "%s: empty CSV input (a header row is required)", ig->name);
    ig->n_header = n;
    ig->csv_col = hs_calloc((size_t)n, sizeof(int));
    if (!ig->csv_col)
        return hs_err_nomem(err, 0);
    const cell *cl = (const cell *)ig->cells.data;
    for (int j = 0; j < n; j++) {
        /* (a header of empty cells may have no line buffer at all) */
        const uint8_t *nb = cl[j].len ? ig->line_buf.data + cl[j].off : (const uint8_t *)"";
        if (hs_utf8_valid_prefix(nb, cl[j].len) < cl[j].len || memchr(nb, 0, cl[j].len))
            return hs_err_set(err, HS_INVALID, "%s:1: column %d of the header is not a name "
                              "(not UTF-8, or a NUL byte)", ig->name, j + 1);
        for (int i = 0; i < j; i++)
            if (cl[i].len == cl[j].len &&
                (cl[j].len == 0 || memcmp(ig->line_buf.data + cl[i].off, nb, cl[j].len) == 0))
                return hs_err_set(err, HS_INVALID, "%s:1: column \"%.*s\" appears twice in the "
                                  "header (columns %d and %d)", ig->name,
                                  (int)(cl[j].len > 60 ? 60 : cl[j].len), (const char *)nb, i + 1,
                                  j + 1);
        char *name = hs_strndup((const char *)nb, cl[j].len);
        if (!name)
            return hs_err_nomem(err, 0);
        ig->csv_col[j] = -1;
        if (infer) {
            hs_field f;
            hs_field_init(&f, name, HS_TYPE_STRING, true);
            hs_status st = hs_field_add_child(&ig->schema, &f);
            ig->csv_col[j] = j;
            hs_free(name);
            if (st != HS_OK)
                return hs_err_nomem(err, 0);
            continue;
        }
        for (int i = 0; i < ig->schema.n_children; i++)
            if (strcmp(ig->schema.children[i].name, name) == 0)
                ig->csv_col[j] = i;
        if (ig->csv_col[j] < 0) {
            hs_err_set(err, HS_INVALID, "%s:1: column \"%s\" in the header is not in the schema",
                       ig->name, name);
            hs_free(name);
            return HS_INVALID;
        }
        hs_free(name);
    }
    return HS_OK;
}

static hs_status infer(hs_ingest *ig, hs_error *err)
{
    inf root = {0};
    hs_status st = HS_OK;
    ig->sample = hs_calloc((size_t)ig->infer_rows, sizeof(sample_rec));
    if (!ig->sample)
        return hs_err_nomem(err, 0);
    if (ig->format == HS_INGEST_JSONL) {
        while (st == HS_OK && ig->n_sample < ig->infer_rows) {
            json_t *v;
            st = jsonl_next(ig, &v, err);
            if (st != HS_OK || !v)
                break;
            ig->sample[ig->n_sample++] = (sample_rec){v, 0, 0, ig->rec_line};
            st = inf_json(&root, v, 0);
            if (st == HS_INVALID)
                st = hs_err_set(err, HS_INVALID, "%s:%lld: nesting deeper than 64 levels", ig->name,
                                (long long)ig->rec_line);
        }
        if (st == HS_OK) {
            for (int i = 0; i < root.n_kids && st == HS_OK; i++) {
                hs_field f;
                st = inf_resolve(&root.kids[i], &f);
                if (st == HS_OK)
                    st = hs_field_add_child(&ig->schema, &f);
                else
                    hs_field_clear(&f);
            }
            if (st != HS_OK)
                st = hs_err_nomem(err, 0);
        }
    } else {
        st = read_header(ig, true, err);
        int nh = ig->n_header;
        inf *cols = st == HS_OK ? hs_calloc((size_t)nh, sizeof(inf)) : NULL;
        if (st == HS_OK && !cols)
            st = hs_err_nomem(err, 0);
        for (int j = 0; st == HS_OK && j < nh; j++)
            if (!(cols[j].name = hs_strdup(ig->schema.children[j].name)))
                st = hs_err_nomem(err, 0);
        while (st == HS_OK && ig->n_sample < ig->infer_rows) {
            int n;
            st = csv_next(ig, &n, err);
            if (st != HS_OK || n == 0)
                break;
            if (n != nh) {
                st = hs_err_set(err, HS_INVALID, "%s:%lld: %d fields, the header has %d", ig->name,
                                (long long)ig->rec_line, n, nh);
                break;
            }
            size_t base = ig->sample_bytes.len;
            const cell *cl = (const cell *)ig->cells.data;
            sample_rec r = {NULL, HS_VEC_LEN(&ig->sample_cells, cell), n, ig->rec_line};
            if (hs_buf_append(&ig->sample_bytes, ig->line_buf.data, ig->line_buf.len) != HS_OK) {
                st = hs_err_nomem(err, 0);
                break;
            }
            for (int j = 0; j < n && st == HS_OK; j++) {
                cell c2 = cl[j];
                c2.off += base;
                if (hs_buf_append(&ig->sample_cells, &c2, sizeof c2) != HS_OK)
                    st = hs_err_nomem(err, 0);
                inf_text(&cols[j], (const char *)ig->line_buf.data + cl[j].off, cl[j].len, cl[j].quoted);
            }
            ig->sample[ig->n_sample++] = r;
        }
        for (int j = 0; st == HS_OK && j < nh; j++) {
            unsigned k = cols[j].kinds & ~(unsigned)K_NULL;
            hs_type t = k == K_BOOL ? HS_TYPE_BOOL : k == K_INT ? HS_TYPE_INT64
                      : (k == K_REAL || k == (K_INT | K_REAL)) ? HS_TYPE_FLOAT64 : HS_TYPE_STRING;
            ig->schema.children[j].type = t;
        }
        if (cols)
            for (int j = 0; j < nh; j++)
                inf_clear(&cols[j]);
        hs_free(cols);
    }
    inf_clear(&root);
    if (st == HS_OK && ig->schema.n_children == 0)
        st = hs_err_set(err, HS_INVALID, "%s: no columns found in the first %lld rows", ig->name,
                        (long long)ig->infer_rows);
    return st;
}

hs_status hs_ingest_open(hs_file *in, const hs_ingest_options *opt, hs_ingest **out, hs_error *err)
{
    *out = NULL;
    hs_ingest *ig = hs_calloc(1, sizeof *ig);
    if (!ig)
        return hs_err_nomem(err, sizeof *ig);
    ig->format = opt->format;
    ig->in.f = in;
    ig->in.buf = hs_malloc(RD_CHUNK);
    ig->name = hs_strdup(opt->name ? opt->name : in->name ? in->name : "input");
    ig->batch_rows = opt->batch_rows > 0 ? opt->batch_rows : 65536;
    ig->infer_rows = opt->schema ? 0 : opt->infer_rows > 0 ? opt->infer_rows : 10000;
    hs_status st = HS_OK;
    if (!ig->in.buf || !ig->name)
        st = hs_err_nomem(err, RD_CHUNK);
    if (st == HS_OK && opt->schema) {
        if (opt->schema->type != HS_TYPE_STRUCT || opt->schema->n_children == 0)
            st = hs_err_set(err, HS_INVALID, "ingest: the schema must be a struct with columns");
        else if (hs_field_copy(opt->schema, &ig->schema) != HS_OK)
            st = hs_err_nomem(err, 0);
        if (st == HS_OK && ig->format == HS_INGEST_CSV)
            st = read_header(ig, false, err);
    } else if (st == HS_OK) {
        hs_field_init(&ig->schema, "", HS_TYPE_STRUCT, false);
        st = infer(ig, err);
    }
    if (st != HS_OK) {
        hs_ingest_close(ig);
        return st;
    }
    *out = ig;
    return HS_OK;
}

const hs_field *hs_ingest_schema(const hs_ingest *ig) { return &ig->schema; }
int64_t hs_ingest_rows_read(const hs_ingest *ig) { return ig->rows; }

hs_status hs_ingest_next(hs_ingest *ig, hs_batch **out, hs_error *err)
{
    hs_batch *b = NULL;
    *out = NULL;
    HS_TRY(hs_batch_create(&ig->schema, ig->batch_rows, &b, err));
    hs_status st = HS_OK;
    while (st == HS_OK && b->n_rows < ig->batch_rows) {
        if (ig->sample_pos < ig->n_sample) { /* replay the inference sample */
            sample_rec *r = &ig->sample[ig->sample_pos++];
            ig->rec_line = r->line;
            if (ig->format == HS_INGEST_JSONL) {
                st = put_json_row(ig, b, r->json, err);
                json_decref(r->json);
                r->json = NULL;
            } else {
                st = put_csv_row(ig, b, ig->sample_bytes.data,
                                 (const cell *)ig->sample_cells.data + r->first_cell, r->n_cells, err);
            }
            if (ig->sample_pos == ig->n_sample) {
                hs_buf_free(&ig->sample_bytes);
                hs_buf_free(&ig->sample_cells);
            }
            continue;
        }
        if (ig->format == HS_INGEST_JSONL) {
            json_t *v;
            st = jsonl_next(ig, &v, err);
            if (st != HS_OK || !v)
                break;
            st = put_json_row(ig, b, v, err);
            json_decref(v);
        } else {
            int n;
            st = csv_next(ig, &n, err);
            if (st != HS_OK || n == 0)
                break;
            st = put_csv_row(ig, b, ig->line_buf.data, (const cell *)ig->cells.data, n, err);
        }
    }
    if (st != HS_OK || b->n_rows == 0) {
        hs_batch_free(b);
        return st;
    }
    ig->rows += b->n_rows;
    *out = b;
    return HS_OK;
}

void hs_ingest_close(hs_ingest *ig)
{
    if (!ig)
        return;
    for (int64_t i = ig->sample_pos; i < ig->n_sample; i++)
        if (ig->sample[i].json)
            json_decref(ig->sample[i].json);
    hs_free(ig->sample);
    hs_free(ig->in.buf);
    hs_free(ig->name);
    hs_free(ig->csv_col);
    hs_field_clear(&ig->schema);
    hs_buf_free(&ig->line_buf);
    hs_buf_free(&ig->cells);
    hs_buf_free(&ig->rewrite);
    hs_buf_free(&ig->sample_bytes);
    hs_buf_free(&ig->sample_cells);
    hs_buf_free(&ig->path);
    hs_buf_free(&ig->tmp);
    hs_free(ig);
}

/* ------------------------------------------------------------------ */
/* type grammar                                                         */

typedef struct tparse {
    const char *s, *p;
    hs_error *err;
} tparse;

static void tp_ws(tparse *t)
{
    while (*t->p == ' ' || *t->p == '\t' || *t->p == '\n')
        t->p++;
}

static hs_status tp_fail(tparse *t, const char *what)
{
    return hs_err_set(t->err, HS_INVALID, "type \"%s\": %s at offset %d", t->s, what,
                      (int)(t->p - t->s));
}

static bool tp_eat(tparse *t, char c)
{
    tp_ws(t);
    if (*t->p != c)
        return false;
    t->p++;
    return true;
}

static size_t tp_ident(tparse *t, char *dst, size_t cap)
{
    tp_ws(t);
    size_t n = 0;
    while ((*t->p >= 'a' && *t->p <= 'z') || (*t->p >= 'A' && *t->p <= 'Z') ||
           (*t->p >= '0' && *t->p <= '9') || *t->p == '_') {
        if (n + 1 < cap)
            dst[n++] = (char)(*t->p >= 'A' && *t->p <= 'Z' ? *t->p + 32 : *t->p);
        t->p++;
    }
    dst[n] = 0;
    return n;
}

static bool tp_int(tparse *t, int *out)
{
    tp_ws(t);
    char *end;
    long v = strtol(t->p, &end, 10);
    if (end == t->p || v < -100000 || v > 1000000000)
        return false;
    t->p = end;
    *out = (int)v;
    return true;
}

static hs_status tp_type(tparse *t, const char *name, hs_field *out, int depth);

/* [name:] type [not null] ; name defaults to dflt. */
static hs_status tp_child(tparse *t, const char *dflt, bool need_name, hs_field *out, int depth)
{
    char name[256];
    tp_ws(t);
    const char *save = t->p;
    size_t n = 0;
    if (*t->p == '"' || *t->p == '`') {
        char q = *t->p++;
        while (*t->p && *t->p != q) {
            if (n + 1 < sizeof name)
                name[n++] = *t->p;
            t->p++;
        }
        if (*t->p != q)
            return tp_fail(t, "unterminated quoted name");
        t->p++;
        name[n] = 0;
        if (!tp_eat(t, ':'))
            return tp_fail(t, "expected ':' after a field name");
    } else {
        while (*t->p && *t->p != ':' && *t->p != ',' && *t->p != '<' && *t->p != '>' &&
               *t->p != '[' && *t->p != '(') {
            if (n + 1 < sizeof name)
                name[n++] = *t->p;
            t->p++;
        }
        while (n > 0 && name[n - 1] == ' ')
            n--;
        name[n] = 0;
        if (*t->p == ':') {
            t->p++;
        } else {
            if (need_name)
                return tp_fail(t, "expected 'name: type'");
            t->p = save;
            snprintf(name, sizeof name, "%s", dflt);
            n = strlen(name);
        }
    }
    /* names become Arrow/Iceberg field names and JSON keys: whole, valid UTF-8 */
    if (n + 1 >= sizeof name)
        return tp_fail(t, "field name longer than 254 bytes");
    if (hs_utf8_valid_prefix((const uint8_t *)name, strlen(name)) < strlen(name))
        return tp_fail(t, "field name is not valid UTF-8");
    hs_status st = tp_type(t, name, out, depth + 1);
    if (st != HS_OK) {
        hs_field_clear(out);
        return st;
    }
    tp_ws(t);
    if (strncmp(t->p, "not null", 8) == 0) {
        t->p += 8;
        out->nullable = false;
    }
    return HS_OK;
}

static const struct { const char *name; hs_type type; } tp_simple[] = {
    {"null", HS_TYPE_NA}, {"na", HS_TYPE_NA},
    {"bool", HS_TYPE_BOOL}, {"boolean", HS_TYPE_BOOL},
    {"int8", HS_TYPE_INT8}, {"int16", HS_TYPE_INT16}, {"int32", HS_TYPE_INT32}, {"int64", HS_TYPE_INT64},
    {"uint8", HS_TYPE_UINT8}, {"uint16", HS_TYPE_UINT16}, {"uint32", HS_TYPE_UINT32},
    {"uint64", HS_TYPE_UINT64},
    {"halffloat", HS_TYPE_FLOAT16}, {"float16", HS_TYPE_FLOAT16}, {"half", HS_TYPE_FLOAT16},
    {"float", HS_TYPE_FLOAT32}, {"float32", HS_TYPE_FLOAT32},
    {"double", HS_TYPE_FLOAT64}, {"float64", HS_TYPE_FLOAT64},
    {"string", HS_TYPE_STRING}, {"utf8", HS_TYPE_STRING}, {"large_string", HS_TYPE_STRING},
    {"large_utf8", HS_TYPE_STRING},
    {"binary", HS_TYPE_BINARY}, {"large_binary", HS_TYPE_BINARY},
};

static bool tp_unit(const char *u, hs_time_unit *out)
{
    if (!strcmp(u, "s")) *out = HS_UNIT_SECOND;
    else if (!strcmp(u, "ms")) *out = HS_UNIT_MILLI;
    else if (!strcmp(u, "us")) *out = HS_UNIT_MICRO;
    else if (!strcmp(u, "ns")) *out = HS_UNIT_NANO;
    else return false;
    return true;
}

static hs_status tp_type(tparse *t, const char *name, hs_field *out, int depth)
{
    char id[64];
    memset(out, 0, sizeof *out);
    if (depth > 64)
        return tp_fail(t, "nesting deeper than 64 levels");
    if (tp_ident(t, id, sizeof id) == 0)
        return tp_fail(t, "expected a type name");
    for (size_t i = 0; i < sizeof tp_simple / sizeof tp_simple[0]; i++) {
        if (strcmp(id, tp_simple[i].name) == 0) {
            hs_field_init(out, name, tp_simple[i].type, true);
            return out->name ? HS_OK : HS_NOMEM;
        }
    }
    if (!strcmp(id, "json")) {
        hs_field_init(out, name, HS_TYPE_STRING, true);
        out->ext = HS_EXT_JSON;
        return HS_OK;
    }
    if (!strcmp(id, "uuid")) {
        hs_field_init(out, name, HS_TYPE_FIXED_BINARY, true);
        out->width = 16;
        out->ext = HS_EXT_UUID;
        return HS_OK;
    }
    if (!strcmp(id, "date32") || !strcmp(id, "date")) {
        hs_field_init(out, name, HS_TYPE_DATE32, true);
        if (tp_eat(t, '[')) {
            char u[16];
            tp_ident(t, u, sizeof u);
            if (strcmp(u, "day") || !tp_eat(t, ']'))
                return tp_fail(t, "expected date32[day]");
        }
        return HS_OK;
    }
    if (!strcmp(id, "time32") || !strcmp(id, "time64") || !strcmp(id, "time") || !strcmp(id, "timestamp")) {
        char u[16];
        hs_time_unit unit = HS_UNIT_MICRO;
        bool ts = !strcmp(id, "timestamp");
        char tz[128] = {0};
        if (tp_eat(t, '[')) {
            tp_ident(t, u, sizeof u);
            if (!tp_unit(u, &unit))
                return tp_fail(t, "expected a unit: s, ms, us or ns");
            if (ts && tp_eat(t, ',')) {
                tp_ws(t);
                if (strncmp(t->p, "tz=", 3) == 0)
                    t->p += 3;
                size_t n = 0;
                while (*t->p && *t->p != ']') {
                    if (n + 1 < sizeof tz)
                        tz[n++] = *t->p;
                    t->p++;
                }
                while (n > 0 && tz[n - 1] == ' ')
                    tz[--n] = 0;
                if (n == 0)
                    return tp_fail(t, "empty time zone");
            }
            if (!tp_eat(t, ']'))
                return tp_fail(t, "expected ']'");
        } else if (!ts && strcmp(id, "time") != 0) {
            return tp_fail(t, "expected [unit]");
        }
        hs_type ty = ts ? HS_TYPE_TIMESTAMP
                   : !strcmp(id, "time32") ? HS_TYPE_TIME32
                   : !strcmp(id, "time64") ? HS_TYPE_TIME64
                   : unit <= HS_UNIT_MILLI ? HS_TYPE_TIME32 : HS_TYPE_TIME64;
        if ((ty == HS_TYPE_TIME32 && unit > HS_UNIT_MILLI) || (ty == HS_TYPE_TIME64 && unit < HS_UNIT_MICRO))
            return tp_fail(t, "time32 takes s or ms, time64 us or ns");
        hs_field_init(out, name, ty, true);
        out->unit = unit;
        if (tz[0] && !(out->tz = hs_strdup(tz)))
            return HS_NOMEM;
        return HS_OK;
    }
    if (!strcmp(id, "decimal128") || !strcmp(id, "decimal")) {
        int p = 38, s = 0;
        if (tp_eat(t, '(')) {
            if (!tp_int(t, &p) || p < 1 || p > 38)
                return tp_fail(t, "decimal precision must be 1..38");
            if (tp_eat(t, ',') && !tp_int(t, &s))
                return tp_fail(t, "expected a scale");
            if (!tp_eat(t, ')'))
                return tp_fail(t, "expected ')'");
        }
        if (s > p)
            return tp_fail(t, "decimal scale exceeds the precision");
        hs_field_init(out, name, HS_TYPE_DECIMAL128, true);
        out->precision = p;
        out->scale = s;
        return HS_OK;
    }
    if (!strcmp(id, "fixed_size_binary")) {
        int w;
        if (!tp_eat(t, '[') || !tp_int(t, &w) || w < 1 || !tp_eat(t, ']'))
            return tp_fail(t, "expected fixed_size_binary[N]");
        hs_field_init(out, name, HS_TYPE_FIXED_BINARY, true);
        out->width = w;
        return HS_OK;
    }
    if (!strcmp(id, "list") || !strcmp(id, "large_list") || !strcmp(id, "fixed_size_list")) {
        bool fixed = id[0] == 'f';
        hs_field el;
        if (!tp_eat(t, '<'))
            return tp_fail(t, "expected '<'");
        HS_TRY(tp_child(t, "element", false, &el, depth));
        hs_field_init(out, name, fixed ? HS_TYPE_FIXED_LIST : HS_TYPE_LIST, true);
        if (hs_field_add_child(out, &el) != HS_OK)
            return HS_NOMEM;
        if (!tp_eat(t, '>'))
            return tp_fail(t, "expected '>'");
        if (fixed) {
            int w;
            if (!tp_eat(t, '[') || !tp_int(t, &w) || w < 1 || !tp_eat(t, ']'))
                return tp_fail(t, "expected fixed_size_list<type>[N]");
            out->width = w;
        }
        return HS_OK;
    }
    if (!strcmp(id, "struct")) {
        hs_field_init(out, name, HS_TYPE_STRUCT, true);
        if (!tp_eat(t, '<'))
            return tp_fail(t, "expected '<'");
        if (tp_eat(t, '>'))
            return tp_fail(t, "a struct needs at least one field");
        do {
            hs_field kid;
            HS_TRY(tp_child(t, "", true, &kid, depth));
            for (int i = 0; i < out->n_children; i++) {
                if (!strcmp(out->children[i].name, kid.name)) {
                    hs_field_clear(&kid);
                    return tp_fail(t, "duplicate struct field name");
                }
            }
            if (hs_field_add_child(out, &kid) != HS_OK)
                return HS_NOMEM;
        } while (tp_eat(t, ','));
        if (!tp_eat(t, '>'))
            return tp_fail(t, "expected ',' or '>'");
        return HS_OK;
    }
    if (!strcmp(id, "map")) {
        hs_field entries, k, v;
        if (!tp_eat(t, '<'))
            return tp_fail(t, "expected '<'");
        HS_TRY(tp_child(t, "key", false, &k, depth));
        k.nullable = false;
        if (!tp_eat(t, ',')) {
            hs_field_clear(&k);
            return tp_fail(t, "expected ',' between the key and value types");
        }
        hs_status st = tp_child(t, "value", false, &v, depth);
        if (st != HS_OK) {
            hs_field_clear(&k);
            return st;
        }
        hs_field_init(&entries, "entries", HS_TYPE_STRUCT, false);
        if (hs_field_add_child(&entries, &k) != HS_OK || hs_field_add_child(&entries, &v) != HS_OK) {
            hs_field_clear(&entries);
            return HS_NOMEM;
        }
        hs_field_init(out, name, HS_TYPE_MAP, true);
        if (hs_field_add_child(out, &entries) != HS_OK)
            return HS_NOMEM;
        if (!tp_eat(t, '>'))
            return tp_fail(t, "expected '>'");
        return HS_OK;
    }
    return tp_fail(t, "unknown type name");
}

hs_status hs_type_parse(const char *text, const char *name, hs_field *out, hs_error *err)
{
    tparse t = {text, text, err};
    hs_status st = tp_type(&t, name, out, 0);
    if (st == HS_OK) {
        tp_ws(&t);
        if (strncmp(t.p, "not null", 8) == 0) {
            t.p += 8;
            out->nullable = false;
            tp_ws(&t);
        }
        if (*t.p)
            st = tp_fail(&t, "unexpected text after the type");
    }
    if (st != HS_OK) {
        hs_field_clear(out);
        if (st == HS_NOMEM)
            hs_err_nomem(err, 0);
    }
    return st;
}

hs_status hs_schema_parse_json(const char *text, size_t len, hs_field *out, hs_error *err)
{
    json_error_t jerr;
    json_t *root = hs_json_loadb(text, len, 0, &jerr);
    hs_field_init(out, "", HS_TYPE_STRUCT, false);
    if (!root) {
        hs_field_clear(out);   /* out holds nothing on failure (fuzz_ingest found the leak) */
        return hs_err_set(err, HS_INVALID, "schema: invalid JSON at line %d column %d: %s", jerr.line,
                          jerr.column, jerr.text);
    }
    json_t *fields = json_is_array(root) ? root : json_object_get(root, "fields");
    hs_status st = HS_OK;
    if (!json_is_array(fields) || json_array_size(fields) == 0)
        st = hs_err_set(err, HS_INVALID, "schema: expected {\"fields\": [...]} with at least one field");
    for (size_t i = 0; st == HS_OK && i < json_array_size(fields); i++) {
        json_t *fj = json_array_get(fields, i);
        json_t *name = json_object_get(fj, "name"), *type = json_object_get(fj, "type");
        json_t *nullable = json_object_get(fj, "nullable"), *fid = json_object_get(fj, "field_id");
        if (!json_is_string(name) || !json_is_string(type)) {
            st = hs_err_set(err, HS_INVALID, "schema: field %zu needs string \"name\" and \"type\"", i);
            break;
        }
        if ((nullable && !json_is_boolean(nullable)) || (fid && !json_is_integer(fid))) {
            st = hs_err_set(err, HS_INVALID,
                            "schema: field \"%s\": \"nullable\" must be a boolean, \"field_id\" an integer",
                            json_string_value(name));
            break;
        }
        hs_field f;
        st = hs_type_parse(json_string_value(type), json_string_value(name), &f, err);
        if (st != HS_OK) {
            hs_err_prefix(err, "schema: field \"%s\"", json_string_value(name));
            break;
        }
        if (nullable)
            f.nullable = json_is_true(nullable);
        if (fid)
            f.field_id = (int32_t)json_integer_value(fid);
        for (int j = 0; j < out->n_children; j++)
            if (strcmp(out->children[j].name, f.name) == 0)
                st = hs_err_set(err, HS_INVALID, "schema: duplicate field \"%s\"", f.name);
        if (st != HS_OK) {
            hs_field_clear(&f);
            break;
        }
        if (hs_field_add_child(out, &f) != HS_OK)
            st = hs_err_nomem(err, 0);
    }
    json_decref(root);
    if (st != HS_OK)
        hs_field_clear(out);
    return st;
}
