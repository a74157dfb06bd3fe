/*
 * expr/expr_strfn.c - string functions of the expression engine with
 * PostgreSQL's semantics over UTF-8 text (positions and lengths count
 * characters, not bytes):
 *
 *   function                  result
 *   ------------------------  --------------------------------------------------
 *   replace(s, from, to)      every non-overlapping from (left to right) -> to;
 *                             from = '' leaves s as it is
 *   strpos(s, sub)            1-based character position of the first sub, 0 when
 *   position(sub IN s)        absent, 1 for sub = ''
 *   left(s, n), right(s, n)   the first / last n characters; n < 0: all but the
 *                             last / first |n|
 *   repeat(s, n)              s n times ('' for n <= 0); over 1 GiB is an error
 *   reverse(s)                the characters in reverse order
 *   split_part(s, d, n)       the n-th field of s split at d (n < 0 counts from
 *                             the end; d = '' makes s the only field); n = 0 is
 *                             an error
 *
 * Results live in the chunk's arena (or point into the argument when they
 * are a slice of it).  expr_eval.c calls these per row for valid rows.
 */
#define _GNU_SOURCE 1 /* memmem */
#include "expr/expr_int.h"

#include "base/arena.h"

#include <string.h>

/* Byte offset of the character after k characters from the start (or the end
 * of s when s has fewer). */
static size_t skip_chars(const ex_str *s, int64_t k)
{
    size_t i = 0;
    while (k > 0 && i < s->n) {
        i++;
        while (i < s->n && (s->p[i] & 0xC0) == 0x80)
            i++;
        k--;
    }
    return i;
}

static int64_t count_chars(const uint8_t *p, size_t n)
{
    int64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (p[i] & 0xC0) != 0x80;
    return c;
}

static const uint8_t *find(const uint8_t *h, size_t hn, const uint8_t *nd, size_t nn)
{
    if (nn == 0)
        return h;
    if (nn > hn)
        return NULL;
    return memmem(h, hn, nd, nn);
}

hs_status ex_str_replace(hs_arena *a, const ex_str *s, const ex_str *from, const ex_str *to,
                         ex_str *out)
{
    if (from->n == 0 || !find(s->p, s->n, from->p, from->n)) {
        *out = *s;
        return HS_OK;
    }
    size_t cnt = 0;
    for (const uint8_t *p = s->p, *e = s->p + s->n, *f;
         (f = find(p, (size_t)(e - p), from->p, from->n)) != NULL; p = f + from->n)
        cnt++;
    size_t n = s->n - cnt * from->n + cnt * to->n;
    uint8_t *o = hs_arena_alloc(a, n ? n : 1);
    if (!o)
        return HS_NOMEM;
    size_t at = 0;
    const uint8_t *p = s->p, *e = s->p + s->n, *f;
    while ((f = find(p, (size_t)(e - p), from->p, from->n)) != NULL) {
        memcpy(o + at, p, (size_t)(f - p));
        at += (size_t)(f - p);
        memcpy(o + at, to->p, to->n);
        at += to->n;
        p = f + from->n;
    }
    memcpy(o + at, p, (size_t)(e - p));
    out->p = o;
    out->n = n;
    return HS_OK;
}

int64_t ex_str_strpos(const ex_str *s, const ex_str *sub)
{
    const uint8_t *f = find(s->p, s->n, sub->p, sub->n);
    return f ? count_chars(s->p, (size_t)(f - s->p)) + 1 : 0;
}

void ex_str_left(const ex_str *s, int64_t n, bool right, ex_str *out)
{
    int64_t len = count_chars(s->p, s->n);
    int64_t keep = n >= 0 ? (n < len ? n : len) : (len + n > 0 ? len + n : 0);
    size_t at = right ? skip_chars(s, len - keep) : 0;
    size_t end = right ? s->n : skip_chars(s, keep);
    out->p = s->p + at;
    out->n = end - at;
}

hs_status ex_str_repeat(hs_arena *a, const ex_str *s, int64_t n, ex_str *out)
{
    if (n <= 0 || s->n == 0) {
        out->p = (const uint8_t *)"";
        out->n = 0;
        return HS_OK;
    }
    if ((uint64_t)n > ((uint64_t)1 << 30) / s->n)
        return HS_INVALID;
    size_t total = s->n * (size_t)n;
    uint8_t *o = hs_arena_alloc(a, total);
    if (!o)
        return HS_NOMEM;
    for (int64_t i = 0; i < n; i++)
        memcpy(o + (size_t)i * s->n, s->p, s->n);
    out->p = o;
    out->n = total;
    return HS_OK;
}

hs_status ex_str_reverse(hs_arena *a, const ex_str *s, ex_str *out)
{
    uint8_t *o = hs_arena_alloc(a, s->n ? s->n : 1);
    if (!o)
        return HS_NOMEM;
    size_t i = 0, at = s->n;
    while (i < s->n) {
        size_t j = i + 1;
        while (j < s->n && (s->p[j] & 0xC0) == 0x80)
            j++;
        at -= j - i;
        memcpy(o + at, s->p + i, j - i);
        i = j;
    }
    out->p = o;
    out->n = s->n;
    return HS_OK;
}

void ex_str_split_part(const ex_str *s, const ex_str *d, int64_t n, ex_str *out)
{
    out->p = s->p;
    out->n = 0;
    if (d->n == 0) {
        /* the whole string is the one field */
        if (n == 1 || n == -1)
            *out = *s;
        return;
    }
    int64_t fields = 1;
    for (const uint8_t *p = s->p, *e = s->p + s->n, *f;
         (f = find(p, (size_t)(e - p), d->p, d->n)) != NULL; p = f + d->n)
        fields++;
    if (n < 0)
        n = fields + n + 1;
    if (n < 1 || n > fields)
        return;
    const uint8_t *p = s->p, *e = s->p + s->n;
    for (int64_t k = 1; k < n; k++)
        p = find(p, (size_t)(e - p), d->p, d->n) + d->n;
    const uint8_t *f = find(p, (size_t)(e - p), d->p, d->n);
    out->p = p;
    out->n = (size_t)((f ? f : e) - p);
}
