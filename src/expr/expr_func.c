/*
 * expr/expr_func.c - the helpers behind expression functions: UTF-8 code
 * points, simple case mapping, LIKE patterns and calendar fields.
 *
 * Case mapping (lower, upper, ILIKE) is one-to-one per code point and
 * covers the scripts most text uses: ASCII, Latin-1, Latin Extended-A,
 * Latin Extended Additional (Vietnamese), Greek, Cyrillic, Armenian and
 * fullwidth Latin.  Characters whose case forms change length in PostgreSQL
 * or DuckDB (German sharp s, ligatures) and other scripts are left as they
 * are.  A mapped character never needs more UTF-8 bytes than the original,
 * so the output of ex_case_map fits in the input's length.
 *
 * LIKE: a pattern compiles to ops LIT (one byte), ONE ('_': one code point)
 * and ANY ('%': any run, consecutive ones merged), with the escape character
 * already applied.  Matching is the greedy two-pointer algorithm with one
 * backtrack point (the last ANY): O(len(s) * len(p)) at worst, no recursion.
 *
 * Calendar: proleptic Gregorian (columnar/jsonl.h's day conversions);
 * dow 0 = Sunday and doy from 1 (PostgreSQL, DuckDB); week is ISO 8601.
 */
#include "expr/expr_int.h"

#include "columnar/jsonl.h"

#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* UTF-8                                                               */

size_t ex_utf8_len(const uint8_t *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (p[i] & 0xC0) != 0x80;
    return k;
}

/* Decodes one code point at s[*i] (invalid bytes decode as themselves with
 * length 1, marked by *valid = false). */
static uint32_t decode(const uint8_t *s, size_t n, size_t *i, bool *valid)
{
    uint8_t c = s[*i];
    *valid = true;
    if (c < 0x80) {
        (*i)++;
        return c;
    }
    int len = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (len == 0 || *i + (size_t)len > n) {
        *valid = false;
        (*i)++;
        return c;
    }
    uint32_t cp = c & (0x7F >> len);
    for (int k = 1; k < len; k++) {
        uint8_t d = s[*i + (size_t)k];
        if ((d & 0xC0) != 0x80) {
            *valid = false;
            (*i)++;
            return c;
        }
        cp = cp << 6 | (d & 0x3F);
    }
    *i += (size_t)len;
    return cp;
}

static size_t encode(uint32_t cp, uint8_t *out)
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Pairs where upper = even and lower = odd code point (or the reverse). */
static bool in_pairs(uint32_t cp, uint32_t lo, uint32_t hi) { return cp >= lo && cp <= hi; }

static uint32_t to_lower(uint32_t c)
{
    if (c < 0x80)
        return c >= 'A' && c <= 'Z' ? c + 32 : c;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7))
        return c + 32;
    if (in_pairs(c, 0x100, 0x137) || in_pairs(c, 0x14A, 0x177) || in_pairs(c, 0x1E00, 0x1E95) ||
        in_pairs(c, 0x1EA0, 0x1EFF) || in_pairs(c, 0x460, 0x481) || in_pairs(c, 0x48A, 0x4BF) ||
        in_pairs(c, 0x4D0, 0x52F))
        return c % 2 == 0 ? c + 1 : c;
    if (in_pairs(c, 0x139, 0x148) || in_pairs(c, 0x179, 0x17E) || in_pairs(c, 0x4C1, 0x4CE))
        return c % 2 == 1 ? c + 1 : c;
    if (c == 0x130)
        return 'i';
    if (c == 0x178)
        return 0xFF;
    if ((c >= 0x391 && c <= 0x3A9 && c != 0x3A2))
        return c + 32;
    if (c == 0x386)
        return 0x3AC;
    if (c >= 0x388 && c <= 0x38A)
        return c + 37;
    if (c == 0x38C)
        return 0x3CC;
    if (c == 0x38E || c == 0x38F)
        return c + 63;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 80;
    if (c == 0x4C0)
        return 0x4CF;
    if (c >= 0x531 && c <= 0x556)
        return c + 48;
    if (c >= 0xFF21 && c <= 0xFF3A)
        return c + 32;
    return c;
}

static uint32_t to_upper(uint32_t c)
{
    if (c < 0x80)
        return c >= 'a' && c <= 'z' ? c - 32 : c;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7)
        return c - 32;
    if (c == 0xFF)
        return 0x178;
    if (in_pairs(c, 0x100, 0x137) || in_pairs(c, 0x14A, 0x177) || in_pairs(c, 0x1E00, 0x1E95) ||
        in_pairs(c, 0x1EA0, 0x1EFF) || in_pairs(c, 0x460, 0x481) || in_pairs(c, 0x48A, 0x4BF) ||
        in_pairs(c, 0x4D0, 0x52F))
        return c % 2 == 1 ? c - 1 : c;
    if (in_pairs(c, 0x139, 0x148) || in_pairs(c, 0x179, 0x17E) || in_pairs(c, 0x4C1, 0x4CE))
        return c % 2 == 0 ? c - 1 : c;
    if (c == 0x131)
        return 'I';
    if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2)
        return c - 32;
    if (c == 0x3C2)
        return 0x3A3;
    if (c == 0x3AC)
        return 0x386;
    if (c >= 0x3AD && c <= 0x3AF)
        return c - 37;
    if (c == 0x3CC)
        return 0x38C;
    if (c == 0x3CD || c == 0x3CE)
        return c - 63;
    if (c >= 0x430 && c <= 0x44F)
        return c - 32;
    if (c >= 0x450 && c <= 0x45F)
        return c - 80;
    if (c == 0x4CF)
        return 0x4C0;
    if (c >= 0x561 && c <= 0x586)
        return c - 48;
    if (c >= 0xFF41 && c <= 0xFF5A)
        return c - 32;
    return c;
}

size_t ex_case_map(const uint8_t *s, size_t n, uint8_t *out, bool upper)
{
    size_t i = 0, k = 0;
    while (i < n) {
        size_t st = i;
        bool valid;
        uint32_t cp = decode(s, n, &i, &valid);
        if (!valid) {
            out[k++] = s[st];
            continue;
        }
        uint32_t m = upper ? to_upper(cp) : to_lower(cp);
        uint8_t enc[4];
        size_t len = encode(m, enc);
        if (len > i - st) { /* cannot happen with the tables above; keep the original */
            memcpy(out + k, s + st, i - st);
            k += i - st;
        } else {
            memcpy(out + k, enc, len);
            k += len;
        }
    }
    return k;
}

/* ------------------------------------------------------------------ */
/* LIKE                                                                */

enum { OP_LIT = 0, OP_ONE = 1, OP_ANY = 2 };

hs_status ex_like_compile(const uint8_t *p, size_t n, int esc, bool ci, hs_arena *arena,
                          ex_like *out, hs_error *err)
{
    const uint8_t *src = p;
    if (ci && esc >= 'A' && esc <= 'Z')
        esc += 'a' - 'A'; /* the pattern is lowercased below, its escape with it */
    if (ci) {
        uint8_t *low = hs_arena_alloc(arena, n ? n : 1);
        if (!low)
            return hs_err_nomem(err, n);
        n = ex_case_map(p, n, low, false);
        src = low;
    }
    ex_like_op *ops = hs_arena_alloc(arena, (n ? n : 1) * sizeof *ops);
    if (!ops)
        return hs_err_nomem(err, n);
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = src[i];
        if (esc >= 0 && c == (uint8_t)esc) {
            if (i + 1 >= n)
                return hs_err_set(err, HS_INVALID, "LIKE pattern must not end with escape character");
            ops[k].kind = OP_LIT;
            ops[k++].byte = src[++i];
        } else if (c == '%') {
            if (k == 0 || ops[k - 1].kind != OP_ANY)
                ops[k++].kind = OP_ANY;
        } else if (c == '_') {
            ops[k++].kind = OP_ONE;
        } else {
            ops[k].kind = OP_LIT;
            ops[k++].byte = c;
        }
    }
    out->n = k;
    out->ops = ops;
    /* literal runs between '%'s, when there is no '_' */
    out->n_seg = -1;
    out->seg = NULL;
    out->seg_len = NULL;
    bool simple = true;
    int runs = 0;
    for (int i = 0; i < k; i++) {
        if (ops[i].kind == OP_ONE)
            simple = false;
        if (ops[i].kind == OP_LIT && (i == 0 || ops[i - 1].kind != OP_LIT))
            runs++;
    }
    if (!simple)
        return HS_OK;
    uint8_t *bytes = hs_arena_alloc(arena, (size_t)k + 1);
    const uint8_t **seg = hs_arena_alloc(arena, ((size_t)runs + 1) * sizeof *seg);
    size_t *len = hs_arena_alloc(arena, ((size_t)runs + 1) * sizeof *len);
    if (!bytes || !seg || !len)
        return hs_err_nomem(err, (size_t)k);
    int ns = 0;
    for (int i = 0; i < k; i++) {
        if (ops[i].kind != OP_LIT)
            continue;
        if (i == 0 || ops[i - 1].kind != OP_LIT) {
            seg[ns] = bytes + i;
            len[ns++] = 0;
        }
        bytes[i] = ops[i].byte;
        len[ns - 1]++;
    }
    out->lead_any = k > 0 && ops[0].kind == OP_ANY;
    out->trail_any = k > 0 && ops[k - 1].kind == OP_ANY;
    out->seg = seg;
    out->seg_len = len;
    out->n_seg = ns;
    return HS_OK;
}

/* The first occurrence of needle (nl > 0 bytes) in h[0..hn), or NULL. */
static const uint8_t *find_bytes(const uint8_t *h, size_t hn, const uint8_t *needle, size_t nl)
{
    while (hn >= nl) {
        const uint8_t *c = memchr(h, needle[0], hn - nl + 1);
        if (!c)
            return NULL;
        if (!memcmp(c + 1, needle + 1, nl - 1))
            return c;
        hn -= (size_t)(c - h) + 1;
        h = c + 1;
    }
    return NULL;
}

/* '%'-and-literal patterns: the first run anchored at the start unless the
 * pattern starts with '%', the last at the end unless it ends with '%',
 * the others found leftmost in order (leftmost is never worse for the
 * runs after it). */
static bool like_simple(const ex_like *pat, const uint8_t *s, size_t n)
{
    int ns = pat->n_seg;
    if (ns == 0)
        return pat->n == 0 ? n == 0 : true;  /* "" or only '%' */
    size_t lo = 0, hi = n;
    int first = 0, last = ns - 1;
    if (!pat->lead_any) {
        size_t l = pat->seg_len[0];
        if (l > n || memcmp(s, pat->seg[0], l))
            return false;
        lo = l;
        first = 1;
        if (ns == 1 && !pat->trail_any)
            return l == n;
    }
    if (!pat->trail_any && last >= first) {
        size_t l = pat->seg_len[last];
        if (l > hi - lo || memcmp(s + n - l, pat->seg[last], l))
            return false;
        hi = n - l;
        last--;
    }
    for (int i = first; i <= last; i++) {
        size_t l = pat->seg_len[i];
        if (l > hi - lo)
            return false;
        const uint8_t *f = find_bytes(s + lo, hi - lo, pat->seg[i], l);
        if (!f)
            return false;
        lo = (size_t)(f - s) + l;
    }
    return true;
}

static size_t cp_len_at(const uint8_t *s, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && (s[j] & 0xC0) == 0x80)
        j++;
    return j - i;
}

bool ex_like_match(const ex_like *pat, const uint8_t *s, size_t n)
{
    if (pat->n_seg >= 0)
        return like_simple(pat, s, n);
    const ex_like_op *p = pat->ops;
    int np = pat->n, pi = 0, star = -1;
    size_t si = 0, star_s = 0;
    while (si < n) {
        if (pi < np && p[pi].kind == OP_ANY) {
            star = ++pi;
            star_s = si;
            continue;
        }
        if (pi < np && p[pi].kind == OP_ONE) {
            si += cp_len_at(s, n, si);
            pi++;
            continue;
        }
        if (pi < np && p[pi].byte == s[si]) {
            si++;
            pi++;
            continue;
        }
        if (star < 0)
            return false;
        pi = star;
        star_s += cp_len_at(s, n, star_s);
        si = star_s;
    }
    while (pi < np && p[pi].kind == OP_ANY)
        pi++;
    return pi == np;
}

/* ------------------------------------------------------------------ */
/* calendar                                                            */

bool ex_dfield_parse(const char *s, size_t n, ex_dfield *out)
{
    static const struct { const char *name; ex_dfield f; } t[] = {
        {"year", EX_DF_YEAR}, {"years", EX_DF_YEAR}, {"y", EX_DF_YEAR}, {"yr", EX_DF_YEAR},
        {"quarter", EX_DF_QUARTER}, {"month", EX_DF_MONTH}, {"months", EX_DF_MONTH},
        {"mon", EX_DF_MONTH}, {"week", EX_DF_WEEK}, {"weeks", EX_DF_WEEK}, {"w", EX_DF_WEEK},
        {"day", EX_DF_DAY}, {"days", EX_DF_DAY}, {"d", EX_DF_DAY}, {"hour", EX_DF_HOUR},
        {"hours", EX_DF_HOUR}, {"h", EX_DF_HOUR}, {"minute", EX_DF_MINUTE},
        {"minutes", EX_DF_MINUTE}, {"min", EX_DF_MINUTE}, {"m", EX_DF_MINUTE},
        {"second", EX_DF_SECOND}, {"seconds", EX_DF_SECOND}, {"sec", EX_DF_SECOND},
        {"s", EX_DF_SECOND}, {"dow", EX_DF_DOW}, {"dayofweek", EX_DF_DOW}, {"doy", EX_DF_DOY},
        {"dayofyear", EX_DF_DOY}, {"epoch", EX_DF_EPOCH}, {"millisecond", EX_DF_MILLISECOND},
        {"milliseconds", EX_DF_MILLISECOND}, {"ms", EX_DF_MILLISECOND},
        {"microsecond", EX_DF_MICROSECOND}, {"microseconds", EX_DF_MICROSECOND},
        {"us", EX_DF_MICROSECOND}, {"isodow", EX_DF_ISODOW}, {"isoyear", EX_DF_ISOYEAR},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strlen(t[i].name) == n && strncasecmp(s, t[i].name, n) == 0) {
            *out = t[i].f;
            return true;
        }
    return false;
}

/* ISO 8601 week number of a day. */
static int64_t iso_week(int64_t days)
{
    int64_t dow = ((days % 7) + 7 + 3) % 7;   /* 0 = Monday (1970-01-01 was a Thursday) */
    int64_t thursday = days - dow + 3;
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(thursday, &y, &m, &d);
    int64_t jan1 = hs_days_from_civil(y, 1, 1);
    return (thursday - jan1) / 7 + 1;
}

bool ex_date_part(ex_dfield f, ex_t t, int unit, int64_t v, int64_t *out)
{
    int64_t ups = ex_unit_per_sec(unit), days = v, tod = 0;
    if (t == EX_T_TS) {
        int64_t per_day = 86400 * ups;
        days = ex_floor_div(v, per_day);
        tod = v - days * per_day;
    } else if (t == EX_T_TIME) {
        tod = v;
        days = 0;
    }
    if (t == EX_T_TIME && f != EX_DF_HOUR && f != EX_DF_MINUTE && f != EX_DF_SECOND &&
        f != EX_DF_MILLISECOND && f != EX_DF_MICROSECOND && f != EX_DF_EPOCH)
        return false;
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(days, &y, &m, &d);
    int64_t secs = tod / ups;
    switch (f) {
    case EX_DF_YEAR: *out = y; return true;
    case EX_DF_QUARTER: *out = (m - 1) / 3 + 1; return true;
    case EX_DF_MONTH: *out = m; return true;
    case EX_DF_WEEK: *out = iso_week(days); return true;
    case EX_DF_DAY: *out = d; return true;
    case EX_DF_HOUR: *out = secs / 3600; return true;
    case EX_DF_MINUTE: *out = secs / 60 % 60; return true;
    case EX_DF_SECOND: *out = secs % 60; return true;
    case EX_DF_MILLISECOND: *out = (secs % 60) * 1000 + (tod % ups) * 1000 / ups; return true;
    case EX_DF_MICROSECOND:
        *out = (secs % 60) * 1000000 + (ups >= 1000000 ? (tod % ups) / (ups / 1000000)
                                                       : (tod % ups) * (1000000 / ups));
        return true;
    case EX_DF_DOW: *out = ((days % 7) + 7 + 4) % 7; return true;
    case EX_DF_DOY: *out = days - hs_days_from_civil(y, 1, 1) + 1; return true;
    case EX_DF_ISODOW: *out = ((days % 7) + 7 + 3) % 7 + 1; return true; /* Monday 1 .. Sunday 7 */
    case EX_DF_ISOYEAR: { /* the year of the ISO week's Thursday */
        int64_t iy;
        unsigned im, id;
        hs_civil_from_days(days - (((days % 7) + 7 + 3) % 7) + 3, &iy, &im, &id);
        *out = iy;
        return true;
    }
    case EX_DF_EPOCH:
        *out = t == EX_T_DATE ? days * 86400 : t == EX_T_TIME ? secs : ex_floor_div(v, ups);
        return true;
    }
    return false;
}

bool ex_date_trunc(ex_dfield f, int unit, int64_t v, int64_t *out)
{
    int64_t ups = ex_unit_per_sec(unit), per_day = 86400 * ups;
    int64_t days = ex_floor_div(v, per_day);
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(days, &y, &m, &d);
    int64_t nd;
    switch (f) {
    case EX_DF_YEAR: nd = hs_days_from_civil(y, 1, 1); break;
    case EX_DF_QUARTER: nd = hs_days_from_civil(y, (m - 1) / 3 * 3 + 1, 1); break;
    case EX_DF_MONTH: nd = hs_days_from_civil(y, m, 1); break;
    case EX_DF_WEEK: nd = days - ((days % 7) + 7 + 3) % 7; break;
    case EX_DF_DAY: nd = days; break;
    case EX_DF_HOUR: *out = ex_floor_div(v, 3600 * ups) * 3600 * ups; return true;
    case EX_DF_MINUTE: *out = ex_floor_div(v, 60 * ups) * 60 * ups; return true;
    case EX_DF_SECOND: *out = ex_floor_div(v, ups) * ups; return true;
    case EX_DF_MILLISECOND:
        if (ups <= 1000) { *out = v; return true; }
        *out = ex_floor_div(v, ups / 1000) * (ups / 1000);
        return true;
    case EX_DF_MICROSECOND:
        if (ups <= 1000000) { *out = v; return true; }
        *out = ex_floor_div(v, 1000) * 1000;
        return true;
    default: return false;
    }
    return !__builtin_mul_overflow(nd, per_day, out);
}
