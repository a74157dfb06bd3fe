/*
 * expr/expr_sqlfn.c - more of PostgreSQL 15's scalar functions, with its
 * semantics over UTF-8 text (lengths count characters):
 *
 *   lpad(s, n[, fill]), rpad     s cut or padded to n characters (fill ' ';
 *                                an empty fill does not pad)
 *   translate(s, from, to)       each character of from -> the one at the same
 *                                place in to, deleted when to is shorter
 *   md5(text | bytea)            32 lowercase hex digits
 *   chr(n)                       the character of code point n (0, surrogates and
 *                                n > 0x10FFFF: 54000)
 *   ascii(s)                     the first character's code point (0 for '')
 *   initcap(s)                   first letter of each word upper, the rest lower
 *                                (words: runs of letters and digits; letters of
 *                                ex_case_map's alphabets)
 *   make_date(y, m, d)           a date (year < 0: BC; invalid: 22008)
 *   regular expressions          ~ ~* !~ !~*, regexp_like, regexp_replace,
 *                                regexp_count, regexp_substr
 *   to_char(timestamp, fmt)      the common template patterns (see below)
 *
 * Regular expressions.  PostgreSQL's are ARE (Tcl's engine); ours are POSIX
 * ERE (regcomp/regexec of the C library) after a translation of the pattern:
 * the class escapes \d \D \s \S \w \W (also inside brackets, as 0-9,
 * [:space:], [:alnum:]_), \m \M \y (word starts/ends/boundaries), \A \Z,
 * \t \n \r, (?:...) (non-capturing; replacement group numbers follow
 * PostgreSQL's), and the flags i c g n m s t of PostgreSQL's flag string.
 * Not supported, an error rather than a different match (0A000): non-greedy
 * quantifiers (*? +? ?? {m,n}?), lookahead/lookbehind, embedded options
 * (?i), \] \- \^ inside brackets, and the other flags.  One difference
 * stays: where several alternatives match at the same position, POSIX takes
 * the longest (PostgreSQL's ARE too, unless the pattern starts with a
 * non-greedy quantifier, which is refused).  Characters are the process's
 * LC_CTYPE's: under a UTF-8 locale (Python sets one from the environment)
 * '.' and brackets take whole UTF-8 characters, under "C" single bytes.
 */
#define _GNU_SOURCE 1 /* REG_STARTEND */
#include "expr/expr_int.h"

#include "base/arena.h"
#include "columnar/jsonl.h"

#include <openssl/evp.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- characters ---- */

static size_t cp_next(const uint8_t *s, size_t n, size_t i)
{
    i++;
    while (i < n && (s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

static size_t cp_count(const ex_str *s) { return ex_utf8_len(s->p, s->n); }

/* Byte offset after k characters. */
static size_t cp_skip(const ex_str *s, size_t k)
{
    size_t i = 0;
    while (k > 0 && i < s->n) {
        i = cp_next(s->p, s->n, i);
        k--;
    }
    return i;
}

static uint32_t cp_decode(const uint8_t *s, size_t n, size_t i)
{
    uint8_t c = s[i];
    if (c < 0x80)
        return c;
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    uint32_t v = c & (len == 4 ? 0x07 : len == 3 ? 0x0F : 0x1F);
    for (int k = 1; k < len && i + (size_t)k < n; k++)
        v = (v << 6) | (s[i + (size_t)k] & 0x3F);
    return v;
}

#define MAX_STR ((int64_t)1 << 30)

hs_status ex_str_pad(hs_arena *a, const ex_str *s, int64_t len, const ex_str *fill, bool left,
                     ex_str *out)
{
    if (len < 0)
        len = 0;
    if (len > MAX_STR)
        return HS_INVALID;
    size_t slen = cp_count(s);
    if ((int64_t)slen > len)
        slen = (size_t)len;
    size_t flen = cp_count(fill);
    if (flen == 0)
        len = (int64_t)slen;
    size_t sbytes = cp_skip(s, slen), npad = (size_t)len - slen;
    /* pad bytes: whole fills plus a prefix */
    size_t whole = flen ? npad / flen : 0, rest = flen ? npad % flen : 0;
    size_t pbytes = whole * fill->n + cp_skip(fill, rest);
    if (sbytes + pbytes > (size_t)MAX_STR)
        return HS_INVALID;
    uint8_t *p = hs_arena_alloc(a, sbytes + pbytes + 1);
    if (!p)
        return HS_NOMEM;
    uint8_t *w = p;
    if (!left) {
        memcpy(w, s->p, sbytes);
        w += sbytes;
    }
    for (size_t k = 0; k < whole; k++) {
        memcpy(w, fill->p, fill->n);
        w += fill->n;
    }
    size_t rb = cp_skip(fill, rest);
    memcpy(w, fill->p, rb);
    w += rb;
    if (left) {
        memcpy(w, s->p, sbytes);
        w += sbytes;
    }
    out->p = p;
    out->n = (size_t)(w - p);
    return HS_OK;
}

hs_status ex_str_translate(hs_arena *a, const ex_str *s, const ex_str *from, const ex_str *to,
                           ex_str *out)
{
    uint8_t *p = hs_arena_alloc(a, s->n * 4 + 1);
    if (!p)
        return HS_NOMEM;
    size_t w = 0;
    for (size_t i = 0; i < s->n;) {
        size_t e = cp_next(s->p, s->n, i), cl = e - i;
        /* the first occurrence in from */
        size_t idx = 0, f = 0;
        bool found = false;
        while (f < from->n) {
            size_t fe = cp_next(from->p, from->n, f);
            if (fe - f == cl && memcmp(from->p + f, s->p + i, cl) == 0) {
                found = true;
                break;
            }
            f = fe;
            idx++;
        }
        if (!found) {
            memcpy(p + w, s->p + i, cl);
            w += cl;
        } else {
            size_t t = cp_skip(to, idx);
            if (t < to->n) {
                size_t te = cp_next(to->p, to->n, t);
                memcpy(p + w, to->p + t, te - t);
                w += te - t;
            }
        }
        i = e;
    }
    out->p = p;
    out->n = w;
    return HS_OK;
}

hs_status ex_str_md5(hs_arena *a, const ex_str *s, ex_str *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mlen = 0;
    if (EVP_Digest(s->n ? s->p : (const uint8_t *)"", s->n, md, &mlen, EVP_md5(), NULL) != 1 ||
        mlen != 16)
        return HS_NOMEM;
    uint8_t *p = hs_arena_alloc(a, 33);
    if (!p)
        return HS_NOMEM;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        p[2 * i] = (uint8_t)hex[md[i] >> 4];
        p[2 * i + 1] = (uint8_t)hex[md[i] & 15];
    }
    out->p = p;
    out->n = 32;
    return HS_OK;
}

hs_status ex_str_chr(hs_arena *a, int64_t cp, ex_str *out, char *msg)
{
    uint32_t v = (uint32_t)cp; /* PostgreSQL reads the int4 as uint32 */
    if (v == 0) {
        snprintf(msg, 256, "null character not permitted");
        return HS_INVALID;
    }
    if (v > 0x10FFFF) {
        snprintf(msg, 256, "requested character too large for encoding: %u", v);
        return HS_INVALID;
    }
    if (v >= 0xD800 && v <= 0xDFFF) {
        snprintf(msg, 256, "requested character not valid for encoding: %u", v);
        return HS_INVALID;
    }
    uint8_t *p = hs_arena_alloc(a, 4);
    if (!p)
        return HS_NOMEM;
    size_t n;
    if (v < 0x80) {
        p[0] = (uint8_t)v;
        n = 1;
    } else if (v < 0x800) {
        p[0] = (uint8_t)(0xC0 | (v >> 6));
        p[1] = (uint8_t)(0x80 | (v & 0x3F));
        n = 2;
    } else if (v < 0x10000) {
        p[0] = (uint8_t)(0xE0 | (v >> 12));
        p[1] = (uint8_t)(0x80 | ((v >> 6) & 0x3F));
        p[2] = (uint8_t)(0x80 | (v & 0x3F));
        n = 3;
    } else {
        p[0] = (uint8_t)(0xF0 | (v >> 18));
        p[1] = (uint8_t)(0x80 | ((v >> 12) & 0x3F));
        p[2] = (uint8_t)(0x80 | ((v >> 6) & 0x3F));
        p[3] = (uint8_t)(0x80 | (v & 0x3F));
        n = 4;
    }
    out->p = p;
    out->n = n;
    return HS_OK;
}

int64_t ex_str_ascii(const ex_str *s)
{
    return s->n ? (int64_t)cp_decode(s->p, s->n, 0) : 0;
}

static bool is_word_cp(const uint8_t *p, size_t n)
{
    if (n > 1)
        return true; /* non-ASCII: letters of the alphabets ex_case_map knows, mostly */
    uint8_t c = p[0];
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

hs_status ex_str_initcap(hs_arena *a, const ex_str *s, ex_str *out)
{
    uint8_t *p = hs_arena_alloc(a, s->n + 1);
    if (!p)
        return HS_NOMEM;
    size_t w = 0;
    bool in_word = false;
    for (size_t i = 0; i < s->n;) {
        size_t e = cp_next(s->p, s->n, i);
        size_t m = ex_case_map(s->p + i, e - i, p + w, !in_word);
        in_word = is_word_cp(s->p + i, e - i);
        w += m;
        i = e;
    }
    out->p = p;
    out->n = w;
    return HS_OK;
}

bool ex_make_date(int64_t y, int64_t m, int64_t d, int64_t *days, char *msg)
{
    int64_t py = y < 0 ? y + 1 : y; /* year -1 is 1 BC, the proleptic year 0 */
    bool ok = y != 0 && m >= 1 && m <= 12 && d >= 1 && y > -4714 && y < 5874898;
    if (ok) {
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (py % 4 == 0 && py % 100 != 0) || py % 400 == 0;
        ok = d <= mdays[m - 1] + (m == 2 && leap);
    }
    if (!ok) {
        snprintf(msg, 256, "date field value out of range: %lld-%02lld-%02lld", (long long)y,
                 (long long)m, (long long)d);
        return false;
    }
    *days = hs_days_from_civil(py, (unsigned)m, (unsigned)d);
    return true;
}

/* ---- regular expressions ---- */

struct ex_regex {
    regex_t re;
    char *buf;         /* the subject with a terminating NUL (regexec's sanitizer */
    size_t cap;        /* interceptors read to it even with REG_STARTEND) */
    int n_pg;          /* PostgreSQL's capture groups */
    int map[10];       /* PostgreSQL group i (1..9) -> ERE group */
};

typedef struct rbuf {
    char *p;
    size_t n, cap;
} rbuf;

static bool rb_put(rbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 64;
        while (c < b->n + n + 1)
            c *= 2;
        char *q = realloc(b->p, c);
        if (!q)
            return false;
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

#define PUTS(s) do { if (!rb_put(&b, (s), strlen(s))) goto nomem; } while (0)
#define PUTC(c) do { char c_ = (char)(c); if (!rb_put(&b, &c_, 1)) goto nomem; } while (0)

#define RE_GROUP_PLUS_MAX 12

hs_status ex_regex_compile(const ex_str *pat, bool ci, const ex_str *flags, ex_regex **out,
                           bool *global, char *msg)
{
    int cflags = REG_EXTENDED;
    bool g = false;
    for (size_t i = 0; flags && i < flags->n; i++) {
        switch (flags->p[i]) {
        case 'g': g = true; break;
        case 'i': ci = true; break;
        case 'c': ci = false; break;
        case 'n': case 'm': cflags |= REG_NEWLINE; break;
        case 's': cflags &= ~REG_NEWLINE; break;
        case 't': break;
        case 'b': case 'e': case 'q': case 'x': case 'p': case 'w':
            snprintf(msg, 256, "regular expression option \"%c\" is not supported", flags->p[i]);
            return HS_UNSUPPORTED;
        default:
            snprintf(msg, 256, "invalid regular expression option: \"%c\"", flags->p[i]);
            return HS_INVALID;
        }
    }
    if (ci)
        cflags |= REG_ICASE;
    if (global)
        *global = g;
    ex_regex *r = calloc(1, sizeof *r);
    if (!r)
        return HS_NOMEM;
    rbuf b = {0};
    int ere_groups = 0, depth = 0, group_plus = 0;
    double bound_prod = 1.0;
    bool after_quant = false, in_bound = false, after_group = false;
    const uint8_t *s = pat->p;
    size_t n = pat->n;
    if (n >= 3 && s[0] == '*' && s[1] == '*' && s[2] == '*') {
        snprintf(msg, 256, "regular expression director \"***\" is not supported");
        free(r);
        return HS_UNSUPPORTED;
    }
    PUTS("");
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c == 0) {
            snprintf(msg, 256, "invalid regular expression: null character in pattern");
            goto fail_inv;
        }
        /* A quantifier right after a quantifier is an error in PostgreSQL
         * ("a**", "a+{2}"); the C library accepts it and copies the operand
         * once per '+' (2^k copies for k of them: gigabytes from a short
         * pattern).  A '+' or bound applied to a group copies the group, so
         * at most RE_GROUP_PLUS_MAX of those are taken. */
        bool quant = !in_bound && (c == '*' || c == '+' || c == '?' ||
                                   (c == '{' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9'));
        if (quant && after_quant && !(c == '?' && s[i - 1] != '?')) {
            snprintf(msg, 256, "invalid regular expression: quantifier operand invalid");
            goto fail_inv;
        }
        if (quant && c != '*' && c != '?' && after_group && ++group_plus > RE_GROUP_PLUS_MAX) {
            snprintf(msg, 256, "regular expressions with more than %d '+' or {m,n} quantifiers on "
                               "groups are not supported", RE_GROUP_PLUS_MAX);
            goto fail_unsup;
        }
        if (c == '{' && quant)
            in_bound = true;
        if (!in_bound || c == '{')
            after_quant = quant;
        if (in_bound && c == '}') {
            in_bound = false;
            after_quant = true;
        }
        after_group = c == ')' && !in_bound;
        if (c == '\\') {
            if (i + 1 >= n) {
                snprintf(msg, 256, "invalid regular expression: invalid escape \\ sequence");
                goto fail_inv;
            }
            uint8_t e = s[++i];
            switch (e) {
            case 'd': PUTS("[0-9]"); break;
            case 'D': PUTS("[^0-9]"); break;
            case 's': PUTS("[[:space:]]"); break;
            case 'S': PUTS("[^[:space:]]"); break;
            case 'w': PUTS("[[:alnum:]_]"); break;
            case 'W': PUTS("[^[:alnum:]_]"); break;
            case 'm': PUTS("\\<"); break;
            case 'M': PUTS("\\>"); break;
            case 'y': PUTS("\\b"); break;
            case 'Y': PUTS("\\B"); break;
            case 'A': PUTS("^"); break;
            case 'Z': PUTS("$"); break;
            case 't': PUTC('\t'); break;
            case 'n': PUTC('\n'); break;
            case 'r': PUTC('\r'); break;
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
                    snprintf(msg, 256, "regular expression escape \\%c is not supported", e);
                    goto fail_unsup;
                }
                if (e >= '1' && e <= '9') { /* a back reference: PostgreSQL's group number */
                    int k = e - '0';
                    if (k > r->n_pg) {
                        snprintf(msg, 256, "invalid regular expression: invalid backreference number");
                        goto fail_inv;
                    }
                    char t[4] = {'\\', (char)('0' + r->map[k]), 0, 0};
                    if (r->map[k] > 9) {
                        snprintf(msg, 256, "regular expression back reference \\%d is not supported", k);
                        goto fail_unsup;
                    }
                    PUTS(t);
                    break;
                }
                PUTC('\\');
                PUTC(e);
                break;
            }
            continue;
        }
        if (c == '[') {
            /* a bracket expression, copied with the class escapes translated */
            PUTC('[');
            size_t j = i + 1;
            if (j < n && s[j] == '^')
                PUTC(s[j++]);
            if (j < n && s[j] == ']')
                PUTC(s[j++]);
            bool closed = false;
            while (j < n) {
                uint8_t x = s[j];
                if (x == ']') {
                    closed = true;
                    break;
                }
                if (x == '[' && j + 1 < n && (s[j + 1] == ':' || s[j + 1] == '.' || s[j + 1] == '=')) {
                    uint8_t kind = s[j + 1];
                    size_t k = j + 2;
                    while (k + 1 < n && !(s[k] == kind && s[k + 1] == ']'))
                        k++;
                    if (k + 1 >= n) {
                        snprintf(msg, 256, "invalid regular expression: brackets [] not balanced");
                        goto fail_inv;
                    }
                    if (!rb_put(&b, (const char *)s + j, k + 2 - j))
                        goto nomem;
                    j = k + 2;
                    continue;
                }
                if (x == '\\' && j + 1 < n) {
                    uint8_t e = s[j + 1];
                    j += 2;
                    switch (e) {
                    case 'd': PUTS("0-9"); break;
                    case 's': PUTS("[:space:]"); break;
                    case 'w': PUTS("[:alnum:]_"); break;
                    case 't': PUTC('\t'); break;
                    case 'n': PUTC('\n'); break;
                    case 'r': PUTC('\r'); break;
                    case ']': case '-': case '^': case 'D': case 'S': case 'W':
                        snprintf(msg, 256, "regular expression escape \\%c inside brackets is not supported", e);
                        goto fail_unsup;
                    default:
                        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
                            snprintf(msg, 256, "regular expression escape \\%c is not supported", e);
                            goto fail_unsup;
                        }
                        PUTC(e);
                        break;
                    }
                    continue;
                }
                PUTC(x);
                j++;
            }
            if (!closed) {
                snprintf(msg, 256, "invalid regular expression: brackets [] not balanced");
                goto fail_inv;
            }
            PUTC(']');
            i = j;
            continue;
        }
        if (c == '(') {
            depth++;
            if (i + 1 < n && s[i + 1] == '?') {
                if (i + 2 < n && s[i + 2] == ':') {
                    /* non-capturing: still a group for ERE, not for PostgreSQL */
                    ere_groups++;
                    PUTC('(');
                    i += 2;
                    continue;
                }
                snprintf(msg, 256, "regular expression constraints (?...) are not supported");
                goto fail_unsup;
            }
            ere_groups++;
            if (r->n_pg < 9)
                r->map[r->n_pg + 1] = ere_groups;
            r->n_pg++;
            PUTC('(');
            continue;
        }
        if (c == ')')
            depth--;
        if (c == '{') { /* a bound: PostgreSQL allows counts up to 255 (DUPMAX) */
            size_t j = i + 1;
            long v = 0;
            bool big = false;
            while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == ',')) {
                if (s[j] == ',')
                    v = 0;
                else if (!big && (v = v * 10 + (s[j] - '0')) > 255)
                    big = true;   /* stop there: more digits would overflow v */
                j++;
            }
            if (big) {
                snprintf(msg, 256, "invalid regular expression: invalid repetition count(s)");
                goto fail_inv;
            }
            /* nested bounds multiply the size of the C library's automaton:
             * the product of all counts (nested or not) is capped; hi is
             * the bound's upper count (each count is at most 255 here) */
            long hi = 0;
            for (size_t q = i + 1; q < j; q++)
                hi = s[q] == ',' ? 0 : hi * 10 + (s[q] - '0');
            if (j > i + 1 && s[j - 1] == ',')
                hi = 255; /* {m,}: unbounded */
            bound_prod *= hi > 1 ? (double)hi : 1.0;
            if (bound_prod > 100000.0) {
                snprintf(msg, 256, "regular expression bounds {m,n} whose counts multiply past 100000 "
                                   "are not supported");
                goto fail_unsup;
            }
        }
        if ((c == '*' || c == '+' || c == '?' || c == '}') && i + 1 < n && s[i + 1] == '?') {
            snprintf(msg, 256, "non-greedy quantifiers are not supported");
            goto fail_unsup;
        }
        PUTC(c);
    }
    int rc = regcomp(&r->re, b.p, cflags);
    free(b.p);
    if (rc != 0) {
        char eb[160];
        regerror(rc, &r->re, eb, sizeof eb);
        snprintf(msg, 256, "invalid regular expression: %s", eb);
        free(r);
        return HS_INVALID;
    }
    *out = r;
    return HS_OK;
nomem:
    free(b.p);
    free(r);
    return HS_NOMEM;
fail_inv:
    free(b.p);
    free(r);
    return HS_INVALID;
fail_unsup:
    free(b.p);
    free(r);
    return HS_UNSUPPORTED;
}

void ex_regex_free(ex_regex *r)
{
    if (!r)
        return;
    regfree(&r->re);
    free(r->buf);
    free(r);
}

int ex_regex_find(ex_regex *r, const ex_str *s, size_t from, size_t *m0, size_t *m1,
                  size_t groups[20], char *msg)
{
    regmatch_t pm[10];
    pm[0].rm_so = (regoff_t)from;
    pm[0].rm_eo = (regoff_t)s->n;
    if (s->n + 1 > r->cap) {
        size_t c = r->cap ? r->cap : 64;
        while (c < s->n + 1)
            c *= 2;
        char *q = realloc(r->buf, c);
        if (!q) {
            snprintf(msg, 256, "out of memory");
            return -1;
        }
        r->buf = q;
        r->cap = c;
    }
    if (s->n)
        memcpy(r->buf, s->p, s->n);
    r->buf[s->n] = 0;
    int rc = regexec(&r->re, r->buf, 10, pm, REG_STARTEND);
    if (rc == REG_NOMATCH)
        return 0;
    if (rc != 0) {
        char eb[160];
        regerror(rc, &r->re, eb, sizeof eb);
        snprintf(msg, 256, "regular expression failed: %s", eb);
        return -1;
    }
    *m0 = (size_t)pm[0].rm_so;
    *m1 = (size_t)pm[0].rm_eo;
    if (groups)
        for (int k = 1; k <= 9; k++) {
            int g = k <= r->n_pg ? r->map[k] : 0;
            bool ok = g > 0 && g < 10 && pm[g].rm_so >= 0;
            groups[2 * k] = ok ? (size_t)pm[g].rm_so : (size_t)-1;
            groups[2 * k + 1] = ok ? (size_t)pm[g].rm_eo : (size_t)-1;
        }
    return 1;
}

static bool abuf_put(hs_arena *a, uint8_t **p, size_t *n, size_t *cap, const void *src, size_t k)
{
    if (*n + k > *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        while (c < *n + k)
            c *= 2;
        uint8_t *q = hs_arena_alloc(a, c);
        if (!q)
            return false;
        if (*n)
            memcpy(q, *p, *n);
        *p = q;
        *cap = c;
    }
    if (k)
        memcpy(*p + *n, src, k);
    *n += k;
    return true;
}

hs_status ex_regex_replace(hs_arena *a, ex_regex *r, const ex_str *s, const ex_str *rep,
                           bool global, ex_str *out, char *msg)
{
    uint8_t *p = NULL;
    size_t n = 0, cap = 0, pos = 0, from = 0;
    size_t groups[20];
    while (from <= s->n) {
        size_t m0, m1;
        int rc = ex_regex_find(r, s, from, &m0, &m1, groups, msg);
        if (rc < 0)
            return HS_INVALID;
        if (rc == 0)
            break;
        if (!abuf_put(a, &p, &n, &cap, s->p + pos, m0 - pos))
            return HS_NOMEM;
        groups[0] = m0;
        groups[1] = m1;
        for (size_t i = 0; i < rep->n; i++) {
            uint8_t c = rep->p[i];
            if (c == '\\' && i + 1 < rep->n) {
                uint8_t e = rep->p[i + 1];
                int k = e == '&' ? 0 : (e >= '1' && e <= '9') ? e - '0' : -1;
                if (k >= 0) {
                    if (groups[2 * k] != (size_t)-1 &&
                        !abuf_put(a, &p, &n, &cap, s->p + groups[2 * k], groups[2 * k + 1] - groups[2 * k]))
                        return HS_NOMEM;
                    i++;
                    continue;
                }
                if (e == '\\') {
                    if (!abuf_put(a, &p, &n, &cap, "\\", 1))
                        return HS_NOMEM;
                    i++;
                    continue;
                }
            }
            if (!abuf_put(a, &p, &n, &cap, &c, 1))
                return HS_NOMEM;
        }
        pos = m1;
        if (!global)
            break;
        if (m1 == m0) { /* an empty match: step over one character */
            if (m0 >= s->n)
                break;
            size_t e = cp_next(s->p, s->n, m0);
            if (!abuf_put(a, &p, &n, &cap, s->p + m0, e - m0))
                return HS_NOMEM;
            pos = from = e;
        } else {
            from = m1;
        }
    }
    if (pos == 0 && n == 0) {
        *out = *s;
        return HS_OK;
    }
    if (!abuf_put(a, &p, &n, &cap, s->p + pos, s->n - pos))
        return HS_NOMEM;
    out->p = p ? p : (const uint8_t *)"";
    out->n = n;
    return HS_OK;
}

/* ---- to_char(timestamp, fmt) ---- */

static const char *const MONTHS[] = {"January", "February", "March", "April", "May", "June",
                                     "July", "August", "September", "October", "November",
                                     "December"};
static const char *const DAYS[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday",
                                   "Friday", "Saturday"};

static bool starts(const ex_str *f, size_t i, const char *kw)
{
    size_t k = strlen(kw);
    return i + k <= f->n && memcmp(f->p + i, kw, k) == 0;
}

/* name in the case of the pattern: "MONTH" upper, "Month" capitalized, "month" lower;
 * full names padded to 9 unless fm */
static int put_name(char *o, const char *name, int cas, bool abbrev, bool fm)
{
    char t[16];
    size_t k = abbrev ? 3 : strlen(name);
    for (size_t i = 0; i < k; i++) {
        char ch = name[i];
        if (cas == 2 || (cas == 1 && i == 0))
            ch = (char)(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
        else
            ch = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
        t[i] = ch;
    }
    t[k] = 0;
    return sprintf(o, abbrev || fm ? "%s" : "%-9s", t);
}

hs_status ex_to_char_ts(hs_arena *a, int64_t v, int unit, const ex_str *fmt, ex_str *out, char *msg)
{
    int64_t ups = ex_unit_per_sec(unit), per_day = 86400 * ups;
    int64_t days = ex_floor_div(v, per_day), tod = v - days * per_day;
    int64_t y;
    unsigned mo, d;
    hs_civil_from_days(days, &y, &mo, &d);
    int64_t secs = tod / ups, frac_us = (tod % ups) * 1000000 / ups;
    int hh = (int)(secs / 3600), mi = (int)(secs / 60 % 60), ss = (int)(secs % 60);
    int dow = (int)(((days % 7) + 7 + 4) % 7);
    int64_t doy = days - hs_days_from_civil(y, 1, 1) + 1;
    int64_t isodow = (((days % 7) + 7 + 3) % 7) + 1, isoy, isow;
    {
        int64_t thu = days - (isodow - 1) + 3;
        unsigned im, id;
        hs_civil_from_days(thu, &isoy, &im, &id);
        isow = (thu - hs_days_from_civil(isoy, 1, 1)) / 7 + 1;
    }
    int64_t yy = y > 0 ? y : 1 - y; /* BC years print positive */
    uint8_t *p = NULL;
    size_t n = 0, cap = 0;
    char t[64];
    for (size_t i = 0; i < fmt->n;) {
        bool fm = false;
        while (starts(fmt, i, "FM") || starts(fmt, i, "fm")) {
            fm = true;
            i += 2;
        }
        if (i >= fmt->n)
            break;
        int k = -1;
        size_t adv = 0;
#define KW(s_) (starts(fmt, i, s_) ? (adv = strlen(s_), 1) : 0)
        int cas = 0;
        if (KW("HH24"))
            k = sprintf(t, fm ? "%d" : "%02d", hh);
        else if (KW("HH12") || KW("HH") || KW("hh12") || KW("hh"))
            k = sprintf(t, fm ? "%d" : "%02d", hh % 12 == 0 ? 12 : hh % 12);
        else if (KW("MI") || KW("mi"))
            k = sprintf(t, fm ? "%d" : "%02d", mi);
        else if (KW("SSSSS") || KW("SSSS") || KW("sssss") || KW("ssss"))
            k = sprintf(t, "%lld", (long long)secs);
        else if (KW("SS") || KW("ss"))
            k = sprintf(t, fm ? "%d" : "%02d", ss);
        else if (KW("MS") || KW("ms"))
            k = sprintf(t, fm ? "%lld" : "%03lld", (long long)(frac_us / 1000));
        else if (KW("US") || KW("us"))
            k = sprintf(t, fm ? "%lld" : "%06lld", (long long)frac_us);
        else if (KW("AM") || KW("PM"))
            k = sprintf(t, "%s", hh >= 12 ? "PM" : "AM");
        else if (KW("am") || KW("pm"))
            k = sprintf(t, "%s", hh >= 12 ? "pm" : "am");
        else if (KW("A.M.") || KW("P.M."))
            k = sprintf(t, "%s", hh >= 12 ? "P.M." : "A.M.");
        else if (KW("a.m.") || KW("p.m."))
            k = sprintf(t, "%s", hh >= 12 ? "p.m." : "a.m.");
        else if (KW("Y,YYY") || KW("y,yyy"))
            k = sprintf(t, "%lld,%03lld", (long long)(yy / 1000), (long long)(yy % 1000));
        else if (KW("YYYY") || KW("yyyy"))
            k = sprintf(t, fm ? "%lld" : "%04lld", (long long)yy);
        else if (KW("YYY") || KW("yyy"))
            k = sprintf(t, fm ? "%lld" : "%03lld", (long long)(yy % 1000));
        else if (KW("YY") || KW("yy"))
            k = sprintf(t, fm ? "%lld" : "%02lld", (long long)(yy % 100));
        else if (KW("Y") || KW("y"))
            k = sprintf(t, "%lld", (long long)(yy % 10));
        else if (KW("IYYY") || KW("iyyy"))
            k = sprintf(t, fm ? "%lld" : "%04lld", (long long)(isoy > 0 ? isoy : 1 - isoy));
        else if (KW("IW") || KW("iw"))
            k = sprintf(t, fm ? "%lld" : "%02lld", (long long)isow);
        else if (KW("ID") || KW("id"))
            k = sprintf(t, "%lld", (long long)isodow);
        else if ((cas = 2, KW("MONTH")) || (cas = 1, KW("Month")) || (cas = 0, KW("month")))
            k = put_name(t, MONTHS[mo - 1], cas, false, fm);
        else if ((cas = 2, KW("MON")) || (cas = 1, KW("Mon")) || (cas = 0, KW("mon")))
            k = put_name(t, MONTHS[mo - 1], cas, true, fm);
        else if (KW("MM") || KW("mm"))
            k = sprintf(t, fm ? "%u" : "%02u", mo);
        else if ((cas = 2, KW("DAY")) || (cas = 1, KW("Day")) || (cas = 0, KW("day")))
            k = put_name(t, DAYS[dow], cas, false, fm);
        else if ((cas = 2, KW("DY")) || (cas = 1, KW("Dy")) || (cas = 0, KW("dy")))
            k = put_name(t, DAYS[dow], cas, true, fm);
        else if (KW("DDD") || KW("ddd"))
            k = sprintf(t, fm ? "%lld" : "%03lld", (long long)doy);
        else if (KW("DD") || KW("dd"))
            k = sprintf(t, fm ? "%u" : "%02u", d);
        else if (KW("D") || KW("d"))
            k = sprintf(t, "%d", dow + 1);
        else if (KW("WW") || KW("ww"))
            k = sprintf(t, fm ? "%lld" : "%02lld", (long long)((doy - 1) / 7 + 1));
        else if (KW("W") || KW("w"))
            k = sprintf(t, "%u", (d - 1) / 7 + 1);
        else if (KW("Q") || KW("q"))
            k = sprintf(t, "%u", (mo - 1) / 3 + 1);
        else if (KW("CC") || KW("cc"))
            k = sprintf(t, fm ? "%lld" : "%02lld",
                        (long long)(y > 0 ? (y + 99) / 100 : -((99 - (y - 1)) / 100)));
        else if (KW("J") || KW("j"))
            k = sprintf(t, "%lld", (long long)(days + 2440588));
        else if (KW("BC") || KW("AD"))
            k = sprintf(t, "%s", y > 0 ? "AD" : "BC");
        else if (KW("B.C.") || KW("A.D."))
            k = sprintf(t, "%s", y > 0 ? "A.D." : "B.C.");
        else if (KW("bc") || KW("ad"))
            k = sprintf(t, "%s", y > 0 ? "ad" : "bc");
        else if (KW("TZ") || KW("tz") || KW("OF") || KW("TZH") || KW("TZM")) {
            snprintf(msg, 256, "to_char: time zone patterns (TZ, OF) are not supported");
            return HS_UNSUPPORTED;
        }
#undef KW
        if (k >= 0) {
            i += adv;
            /* TH / th ordinal suffix */
            if (starts(fmt, i, "TH") || starts(fmt, i, "th")) {
                bool up = fmt->p[i] == 'T';
                long long val = atoll(t);
                const char *suf = (val % 100 >= 11 && val % 100 <= 13) ? "th"
                                : val % 10 == 1 ? "st" : val % 10 == 2 ? "nd" : val % 10 == 3 ? "rd" : "th";
                t[k] = (char)(up ? suf[0] - 32 : suf[0]);
                t[k + 1] = (char)(up ? suf[1] - 32 : suf[1]);
                k += 2;
                i += 2;
            }
            if (!abuf_put(a, &p, &n, &cap, t, (size_t)k))
                return HS_NOMEM;
            continue;
        }
        uint8_t c = fmt->p[i];
        if (c == '"') { /* quoted literal text */
            size_t j = i + 1;
            while (j < fmt->n && fmt->p[j] != '"') {
                if (fmt->p[j] == '\\' && j + 1 < fmt->n)
                    j++;
                if (!abuf_put(a, &p, &n, &cap, fmt->p + j, 1))
                    return HS_NOMEM;
                j++;
            }
            i = j + 1;
            continue;
        }
        if (c == '\\' && i + 1 < fmt->n && fmt->p[i + 1] == '"') {
            if (!abuf_put(a, &p, &n, &cap, "\"", 1))
                return HS_NOMEM;
            i += 2;
            continue;
        }
        if (!abuf_put(a, &p, &n, &cap, &c, 1))
            return HS_NOMEM;
        i++;
    }
    out->p = p ? p : (const uint8_t *)"";
    out->n = n;
    return HS_OK;
}

/* ---- to_char(number, fmt) ----
 * Templates of 9 and 0 digit positions with , or G (group separator ",")
 * and . or D (decimal point "."), optionally after FM; the value is rounded
 * to the template's fraction digits first (numerics half away from zero,
 * doubles as printf rounds their binary value, as PostgreSQL does).  Other
 * template characters (S, MI, PL, SG, EEEE, V, RN, TH, L, literals) are
 * refused (0A000). */

int ex_to_char_frac_digits(const ex_str *fmt, char *msg)
{
    size_t i = 0;
    if (fmt->n >= 2 && (memcmp(fmt->p, "FM", 2) == 0 || memcmp(fmt->p, "fm", 2) == 0))
        i = 2;
    int nf = -1, ni = 0;
    for (; i < fmt->n; i++) {
        uint8_t c = fmt->p[i];
        if (c == '9' || c == '0') {
            if (nf >= 0)
                nf++;
            else
                ni++;
        } else if (c == '.' || c == 'D' || c == 'd') {
            if (nf >= 0) {
                snprintf(msg, 256, "multiple decimal points");
                return -3;
            }
            nf = 0;
        } else if ((c == ',' || c == 'G' || c == 'g') && nf < 0) {
            continue;
        } else {
            snprintf(msg, 256, "to_char: the number template character \"%c\" is not supported "
                               "(only FM, 9, 0, ',', G, '.', D)", c);
            return -1;
        }
    }
    if (ni + (nf > 0 ? nf : 0) == 0) {
        snprintf(msg, 256, "to_char: a number template needs 9 or 0 digit positions");
        return -1;
    }
    return nf < 0 ? 0 : nf;
}

hs_status ex_to_char_num(hs_arena *a, bool neg, const char *ip, const char *fp, const ex_str *fmt,
                         int float_post, ex_str *out)
{
    bool fm = fmt->n >= 2 && (memcmp(fmt->p, "FM", 2) == 0 || memcmp(fmt->p, "fm", 2) == 0);
    const uint8_t *f = fmt->p + (fm ? 2 : 0);
    size_t fn = fmt->n - (fm ? 2 : 0);
    int ni = 0, zero_at = -1, point = -1;
    for (size_t i = 0; i < fn; i++) {
        uint8_t c = f[i];
        if (c == '.' || c == 'D' || c == 'd') {
            point = (int)i;
            break;
        }
        if (c == '9' || c == '0') {
            if (c == '0' && zero_at < 0)
                zero_at = ni;
            ni++;
        }
    }
    size_t il = strlen(ip);
    if (il == 0 && point < 0)
        ip = "0", il = 1; /* an integer template prints a zero value as 0 */
    bool over = (int)il > ni;
    /* doubles (PostgreSQL's float8_to_char): DBL_DIG digits at most, so the
     * fraction keeps float_post digits; overflow '#'s drop the rest of the
     * fraction, and with no fraction digit left the point goes too */
    int keep = -1;
    if (float_post >= 0 && (over || float_post == 0))
        keep = float_post;
    size_t cap = fn * 4 + 8;
    char *buf = hs_arena_alloc(a, cap);
    if (!buf)
        return HS_NOMEM;
    /* body: one char per template char, ' ' for blanks */
    char *body = buf + 1;
    int pos = 0;           /* integer digit position, left to right */
    bool printed = false;  /* a digit printed to the left */
    size_t fi = 0, k = 0;
    for (size_t i = 0; i < fn; i++) {
        uint8_t c = f[i];
        if ((int)i == point) {
            if (keep == 0)
                break;
            body[k++] = '.';
            printed = true;
            continue;
        }
        if (point >= 0 && (int)i > point) { /* fraction digit */
            if (keep >= 0 && (int)fi >= keep)
                break;
            body[k++] = over ? '#' : fp[fi];
            fi++;
            continue;
        }
        if (c == '9' || c == '0') {
            int from_right = ni - pos; /* 1 = the units digit */
            pos++;
            char d;
            if (over)
                d = '#';
            else if ((size_t)from_right <= il)
                d = ip[il - (size_t)from_right];
            else if (zero_at >= 0 && pos - 1 >= zero_at)
                d = '0';
            else
                d = ' ';
            if (d != ' ')
                printed = true;
            body[k++] = d;
            continue;
        }
        /* group separator */
        body[k++] = printed ? ',' : ' ';
    }
    /* trailing zeros of 9 fraction positions go in FM mode */
    size_t end = k;
    if (fm && point >= 0 && !over && keep != 0) /* body[i] is template char f[i] */
        while (end > (size_t)point + 1 && body[end - 1] == '0' && f[end - 1] == '9')
            end--;
    /* the sign goes before the first non-blank; blanks before it are padding */
    size_t first = 0;
    while (first < end && body[first] == ' ')
        first++;
    char *o = buf;
    size_t n = 0;
    if (!fm) {
        for (size_t i = 0; i < first; i++)
            o[n++] = ' ';
        o[n++] = neg ? '-' : ' ';
    } else if (neg) {
        o[n++] = '-';
    }
    bool any_digit = false;
    for (size_t i = first; i < end; i++) {
        if (fm && body[i] == ' ')
            continue;
        any_digit |= body[i] >= '0' && body[i] <= '9';
        o[n++] = body[i];
    }
    if (fm && !any_digit && !over) { /* PostgreSQL prints 0 for a value that lost every digit */
        memmove(o + 1 + (neg ? 1 : 0), o + (neg ? 1 : 0), n - (neg ? 1 : 0));
        o[neg ? 1 : 0] = '0';
        n++;
    }
    out->p = (const uint8_t *)o;
    out->n = n;
    return HS_OK;
}
