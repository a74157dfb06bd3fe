/*
 * base/buf.h - growable byte buffers, typed growable arrays, string builder.
 *
 * hs_buf owns `data` (allocated with hs_malloc, freed by hs_buf_free); it
 * grows geometrically.  A zeroed hs_buf is a valid empty buffer.  Appends
 * return HS_NOMEM (status only: they have no error struct) on failure and
 * leave the buffer as it was.  The same buffer serves as a string builder:
 * hs_buf_printf keeps a NUL after `len` without counting it.
 */
#ifndef HS_BASE_BUF_H
#define HS_BASE_BUF_H

#include "base/error.h"
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct hs_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} hs_buf;

void hs_buf_free(hs_buf *b);                 /* frees data, zeroes b */
static inline void hs_buf_reset(hs_buf *b) { b->len = 0; } /* keeps capacity */
HS_MUST_USE hs_status hs_buf_reserve(hs_buf *b, size_t extra); /* room for len+extra */
HS_MUST_USE hs_status hs_buf_append(hs_buf *b, const void *p, size_t n);
HS_MUST_USE hs_status hs_buf_append_byte(hs_buf *b, uint8_t c);
HS_MUST_USE hs_status hs_buf_append_zeros(hs_buf *b, size_t n);
HS_MUST_USE hs_status hs_buf_puts(hs_buf *b, const char *s);
HS_MUST_USE hs_status hs_buf_printf(hs_buf *b, const char *fmt, ...) HS_PRINTF(2, 3);
HS_MUST_USE hs_status hs_buf_resize(hs_buf *b, size_t len); /* grows with zeros or truncates */
/* Takes the bytes out: returns data (caller frees with hs_free) and zeroes b.
 * Returns a valid NUL-terminated empty string when b is empty. */
uint8_t *hs_buf_detach(hs_buf *b, size_t *len_out);
/* NUL-terminated view of the contents (borrowed until the next append). */
const char *hs_buf_cstr(hs_buf *b);

/* Little-endian fixed-width appends. */
HS_MUST_USE hs_status hs_buf_put_u32le(hs_buf *b, uint32_t v);
HS_MUST_USE hs_status hs_buf_put_u64le(hs_buf *b, uint64_t v);

/* Typed growable array on top of hs_buf: HS_VEC_PUSH(&buf, int64_t, v). */
#define HS_VEC_PUSH(b, T, v) hs_buf_vec_push_((b), &(T){(v)}, sizeof(T))
#define HS_VEC_LEN(b, T) ((b)->len / sizeof(T))
#define HS_VEC_AT(b, T, i) (((T *)(b)->data)[i])
static inline hs_status hs_buf_vec_push_(hs_buf *b, const void *p, size_t n)
{
    if (HS_LIKELY(b->cap - b->len >= n)) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        return HS_OK;
    }
    return hs_buf_append(b, p, n);
}

#endif
