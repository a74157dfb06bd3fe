/*
 * base/buf.c - growable byte buffers (also typed arrays and string builder).
 *
 * Representation: data[0 .. len) holds the bytes, data[len .. cap) is spare
 * room; data is NULL iff cap == 0.  Growth doubles (minimum 64 bytes) so n
 * appends cost O(n) amortised.  Every grow leaves at least one spare byte
 * past the requested size, so hs_buf_printf / hs_buf_cstr can keep a NUL at
 * data[len] without counting it in len.
 *
 * Failure: a failed grow returns HS_NOMEM and leaves data/len/cap untouched.
 */
#include "base/buf.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <stdarg.h>
#include <stdio.h>

void hs_buf_free(hs_buf *b)
{
    if (!b)
        return;
    hs_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static hs_status buf_grow(hs_buf *b, size_t need)
{
    size_t new_cap = b->cap < 64 ? 64 : b->cap;
    while (new_cap <= need) {
        if (new_cap > SIZE_MAX / 2) {
            new_cap = need + 1;
            if (new_cap == 0)
                return HS_NOMEM;
            break;
        }
        new_cap *= 2;
    }
    uint8_t *d = hs_realloc(b->data, new_cap);
    if (!d)
        return HS_NOMEM;
    b->data = d;
    b->cap = new_cap;
    return HS_OK;
}

hs_status hs_buf_reserve(hs_buf *b, size_t extra)
{
    size_t need;
    if (__builtin_add_overflow(b->len, extra, &need))
        return HS_NOMEM;
    if (HS_LIKELY(need < b->cap))
        return HS_OK;
    return buf_grow(b, need);
}

hs_status hs_buf_append(hs_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return HS_OK;
    HS_TRY(hs_buf_reserve(b, n));
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return HS_OK;
}

hs_status hs_buf_append_byte(hs_buf *b, uint8_t c)
{
    if (HS_UNLIKELY(b->len + 1 >= b->cap))
        HS_TRY(hs_buf_reserve(b, 1));
    b->data[b->len++] = c;
    return HS_OK;
}

hs_status hs_buf_append_zeros(hs_buf *b, size_t n)
{
    if (n == 0)
        return HS_OK;
    HS_TRY(hs_buf_reserve(b, n));
    memset(b->data + b->len, 0, n);
    b->len += n;
    return HS_OK;
}

hs_status hs_buf_puts(hs_buf *b, const char *s)
{
    size_t n = strlen(s);
    HS_TRY(hs_buf_reserve(b, n));
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return HS_OK;
}

hs_status hs_buf_printf(hs_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = hs_vsnprintf_c(small, sizeof small, fmt, ap); /* "C" locale: text is read again */
    va_end(ap);
    if (n < 0)
        return HS_INVALID;
    HS_TRY(hs_buf_reserve(b, (size_t)n));  /* leaves room for the NUL */
    if ((size_t)n < sizeof small) {
        memcpy(b->data + b->len, small, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        hs_vsnprintf_c((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
    return HS_OK;
}

hs_status hs_buf_resize(hs_buf *b, size_t len)
{
    if (len > b->len)
        return hs_buf_append_zeros(b, len - b->len);
    b->len = len;
    return HS_OK;
}

uint8_t *hs_buf_detach(hs_buf *b, size_t *len_out)
{
    if (b->data && b->len >= b->cap && hs_buf_reserve(b, 1) != HS_OK) {
        /* no room for a NUL: hand the bytes out unterminated */
    }
    uint8_t *d = b->data;
    size_t len = b->len;
    if (!d) {
        d = hs_malloc(1);
        if (!d)
            return NULL;
        d[0] = '\0';
        len = 0;
    } else if (len < b->cap) {
        d[len] = '\0';
    }
    if (len_out)
        *len_out = len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

const char *hs_buf_cstr(hs_buf *b)
{
    if (b->len >= b->cap && hs_buf_reserve(b, 1) != HS_OK)
        return "";   /* out of memory: an empty string rather than a crash */
    b->data[b->len] = '\0';
    return (const char *)b->data;
}

hs_status hs_buf_put_u32le(hs_buf *b, uint32_t v)
{
    uint8_t t[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    return hs_buf_append(b, t, 4);
}

hs_status hs_buf_put_u64le(hs_buf *b, uint64_t v)
{
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    return hs_buf_append(b, t, 8);
}
