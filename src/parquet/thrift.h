/*
 * parquet/thrift.h - Thrift compact protocol primitives (reader and writer).
 *
 * Parquet serializes its metadata (footer, page headers, page index) with the
 * Thrift compact protocol.  This module knows the wire format only; the
 * structures themselves are decoded and encoded in meta.c.
 *
 * Wire format (all integers little-endian base-128 varints, LSB group first):
 *
 *   i8              1 raw byte
 *   i16, i32, i64   zigzag varint: (n << 1) ^ (n >> 63)
 *   double          8 bytes little-endian IEEE 754
 *   binary/string   varint length, then the bytes
 *   uuid            16 raw bytes (type 13, newer Thrift; only skipped here)
 *   struct          fields..., then one STOP byte (0x00)
 *   field header    one byte  DDDD TTTT: D = id delta from the previous field
 *                   of this struct (1..15), T = compact type; D = 0 means the
 *                   absolute id follows as a zigzag i16 varint.  Booleans in a
 *                   struct are carried in T itself (1 = true, 2 = false) and
 *                   have no value bytes.
 *   list / set      one byte  SSSS TTTT: S = size (0..14), T = element type;
 *                   S = 15 means the size follows as a varint.  Boolean
 *                   elements are one byte each (1 = true, anything else false).
 *   map             varint size; if size > 0 one byte KKKK VVVV of key and
 *                   value types, then size key/value pairs.
 *
 *   compact types:  0 STOP  1 BOOL_TRUE  2 BOOL_FALSE  3 BYTE  4 I16  5 I32
 *                   6 I64  7 DOUBLE  8 BINARY  9 LIST  10 SET  11 MAP
 *                   12 STRUCT  13 UUID
 *
 * Reader (pq_tr): a cursor over untrusted bytes.  Every primitive checks the
 * remaining length first; failures are HS_CORRUPT with the byte offset and the
 * reader's `what` ("footer", "page header") in the message.  Every element of
 * every type takes at least one byte, so a container count is checked against
 * the remaining bytes before anything is allocated for it, and skipping a
 * field of any type is bounded by the input length.  Nesting (structs and
 * containers) is bounded by PQ_THRIFT_MAX_DEPTH.
 *
 * Writer (pq_tw): appends to an hs_buf with a sticky status: the first failed
 * append is remembered and later writes are no-ops, so an encoder checks
 * pq_tw's status once at the end.  Field-id deltas are tracked by the caller
 * in an int16_t "last id" per struct being written (0 at struct start).
 */
#ifndef HS_PARQUET_THRIFT_H
#define HS_PARQUET_THRIFT_H

#include "base/buf.h"
#include "base/error.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    PQ_T_STOP = 0, PQ_T_TRUE = 1, PQ_T_FALSE = 2, PQ_T_BYTE = 3, PQ_T_I16 = 4,
    PQ_T_I32 = 5, PQ_T_I64 = 6, PQ_T_DOUBLE = 7, PQ_T_BINARY = 8, PQ_T_LIST = 9,
    PQ_T_SET = 10, PQ_T_MAP = 11, PQ_T_STRUCT = 12, PQ_T_UUID = 13
};

#define PQ_THRIFT_MAX_DEPTH 64

/* ------------------------------------------------------------------ reader */

typedef struct pq_tr {
    const uint8_t *p;      /* next byte */
    const uint8_t *end;    /* one past the last byte */
    const uint8_t *base;   /* start of the input, for offsets in messages */
    hs_error *err;         /* caller's, may be NULL */
    const char *what;      /* "footer", "page header", ... (static string) */
    int depth;             /* current nesting of structs and containers */
} pq_tr;

static inline void pq_tr_init(pq_tr *r, const uint8_t *buf, size_t len, const char *what,
                              hs_error *err)
{
    r->p = buf;
    r->end = buf + len;
    r->base = buf;
    r->err = err;
    r->what = what;
    r->depth = 0;
}

static inline size_t pq_tr_offset(const pq_tr *r) { return (size_t)(r->p - r->base); }
static inline size_t pq_tr_remaining(const pq_tr *r) { return (size_t)(r->end - r->p); }

/* Out-of-line error builders (cold paths).  The macros evaluate to the
 * constant HS_CORRUPT so the compiler sees that error paths never return
 * HS_OK (which keeps -Wmaybe-uninitialized quiet and the fast path tight). */
void pq_tr_fail_eof(pq_tr *r, const char *item) __attribute__((cold));
void pq_tr_fail(pq_tr *r, const char *fmt, ...) HS_PRINTF(2, 3) __attribute__((cold));
#define pq_tr_err_eof(r, item) (pq_tr_fail_eof((r), (item)), HS_CORRUPT)
#define pq_tr_err(r, ...) (pq_tr_fail((r), __VA_ARGS__), HS_CORRUPT)

hs_status pq_tr_varint_slow(pq_tr *r, uint64_t *v);

/* Unsigned varint of at most 10 bytes. */
static inline HS_MUST_USE hs_status pq_tr_varint(pq_tr *r, uint64_t *v)
{
    if (HS_LIKELY(r->p < r->end && r->p[0] < 0x80)) {
        *v = r->p[0];
        r->p++;
        return HS_OK;
    }
    return pq_tr_varint_slow(r, v);
}

static inline uint64_t pq_unzigzag(uint64_t u) { return (u >> 1) ^ (0 - (u & 1)); }
static inline uint64_t pq_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline HS_MUST_USE hs_status pq_tr_i64(pq_tr *r, int64_t *v)
{
    uint64_t u;
    HS_TRY(pq_tr_varint(r, &u));
    *v = (int64_t)pq_unzigzag(u);
    return HS_OK;
}

static inline HS_MUST_USE hs_status pq_tr_i32(pq_tr *r, int32_t *v)
{
    int64_t x;
    HS_TRY(pq_tr_i64(r, &x));
    if (HS_UNLIKELY(x < INT32_MIN || x > INT32_MAX))
        return pq_tr_err(r, "i32 value %lld out of range", (long long)x);
    *v = (int32_t)x;
    return HS_OK;
}

static inline HS_MUST_USE hs_status pq_tr_i16(pq_tr *r, int16_t *v)
{
    int64_t x;
    HS_TRY(pq_tr_i64(r, &x));
    if (HS_UNLIKELY(x < INT16_MIN || x > INT16_MAX))
        return pq_tr_err(r, "i16 value %lld out of range", (long long)x);
    *v = (int16_t)x;
    return HS_OK;
}

static inline HS_MUST_USE hs_status pq_tr_byte(pq_tr *r, int8_t *v)
{
    if (HS_UNLIKELY(r->p >= r->end))
        return pq_tr_err_eof(r, "byte");
    *v = (int8_t)*r->p++;
    return HS_OK;
}

HS_MUST_USE hs_status pq_tr_double(pq_tr *r, double *v);

/* Binary/string: *p borrows from the input (valid while the input is). */
HS_MUST_USE hs_status pq_tr_binary(pq_tr *r, const uint8_t **p, uint32_t *len);

/* Reads a field header.  *type = PQ_T_STOP at the end of a struct (then *id
 * is 0).  *last is the struct's previous field id, updated. */
static inline HS_MUST_USE hs_status pq_tr_field(pq_tr *r, int16_t *last, int16_t *id,
                                                uint8_t *type)
{
    if (HS_UNLIKELY(r->p >= r->end))
        return pq_tr_err_eof(r, "field header");
    uint8_t b = *r->p++;
    uint8_t t = b & 0x0f;
    *type = t;
    if (t == PQ_T_STOP) {
        *id = 0;
        return HS_OK;
    }
    if (HS_UNLIKELY(t > PQ_T_UUID))
        return pq_tr_err(r, "field header 0x%02x has unknown type %u", b, t);
    if (HS_LIKELY(b >> 4)) {
        int32_t nid = (int32_t)*last + (b >> 4);
        if (HS_UNLIKELY(nid > INT16_MAX))
            return pq_tr_err(r, "field id %d out of range", (int)nid);
        *id = (int16_t)nid;
    } else {
        HS_TRY(pq_tr_i16(r, id));
    }
    *last = *id;
    return HS_OK;
}

/* A field's boolean value from its header type (PQ_T_TRUE / PQ_T_FALSE). */
static inline bool pq_tr_is_bool(uint8_t type) { return type == PQ_T_TRUE || type == PQ_T_FALSE; }
static inline bool pq_tr_bool_value(uint8_t type) { return type == PQ_T_TRUE; }

/* A boolean list element (one byte). */
static inline HS_MUST_USE hs_status pq_tr_bool_elem(pq_tr *r, bool *v)
{
    if (HS_UNLIKELY(r->p >= r->end))
        return pq_tr_err_eof(r, "bool element");
    *v = (*r->p++ == PQ_T_TRUE);
    return HS_OK;
}

/* Enter/leave a nested struct or container (depth limit). */
static inline HS_MUST_USE hs_status pq_tr_enter(pq_tr *r)
{
    if (HS_UNLIKELY(++r->depth > PQ_THRIFT_MAX_DEPTH))
        return pq_tr_err(r, "nesting deeper than %d", PQ_THRIFT_MAX_DEPTH);
    return HS_OK;
}
static inline void pq_tr_leave(pq_tr *r) { r->depth--; }

/* Reads a list/set header; checks that n elements fit in the remaining bytes.
 * The caller should pq_tr_enter/pq_tr_leave around the elements when they are
 * containers or structs (pq_tr_skip does it itself). */
HS_MUST_USE hs_status pq_tr_list(pq_tr *r, uint8_t *elem_type, uint32_t *n);
/* Reads a map header (*ktype, *vtype are 0 when n == 0). */
HS_MUST_USE hs_status pq_tr_map(pq_tr *r, uint8_t *ktype, uint8_t *vtype, uint32_t *n);

/* Skips one value of a compact type (anything but STOP), recursively. */
HS_MUST_USE hs_status pq_tr_skip(pq_tr *r, uint8_t type);

/* ------------------------------------------------------------------ writer */

typedef struct pq_tw {
    hs_buf *out;
    hs_status st;          /* sticky: first failure */
} pq_tw;

static inline void pq_tw_init(pq_tw *w, hs_buf *out) { w->out = out; w->st = HS_OK; }

static inline void pq_tw_bytes(pq_tw *w, const void *p, size_t n)
{
    hs_buf *b = w->out;
    if (HS_LIKELY(w->st == HS_OK && b->cap - b->len >= n)) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    } else if (w->st == HS_OK) {
        w->st = hs_buf_append(b, p, n);
    }
}

static inline void pq_tw_byte1(pq_tw *w, uint8_t c)
{
    hs_buf *b = w->out;
    if (HS_LIKELY(w->st == HS_OK && b->cap > b->len))
        b->data[b->len++] = c;
    else
        pq_tw_bytes(w, &c, 1);
}

static inline void pq_tw_varint(pq_tw *w, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    pq_tw_bytes(w, tmp, n);
}

static inline void pq_tw_zigzag(pq_tw *w, int64_t v) { pq_tw_varint(w, pq_zigzag(v)); }

/* Field header for field `id` of compact type `type`; *last tracks the delta. */
static inline void pq_tw_field(pq_tw *w, int16_t *last, int16_t id, uint8_t type)
{
    int32_t delta = (int32_t)id - *last;
    if (delta > 0 && delta <= 15) {
        pq_tw_byte1(w, (uint8_t)((delta << 4) | type));
    } else {
        pq_tw_byte1(w, type);
        pq_tw_zigzag(w, id);
    }
    *last = id;
}

static inline void pq_tw_stop(pq_tw *w) { pq_tw_byte1(w, PQ_T_STOP); }

static inline void pq_tw_binary(pq_tw *w, const void *p, size_t n)
{
    pq_tw_varint(w, n);
    if (n)
        pq_tw_bytes(w, p, n);
}

/* List/set header. */
static inline void pq_tw_list(pq_tw *w, uint8_t elem_type, uint32_t n)
{
    if (n < 15) {
        pq_tw_byte1(w, (uint8_t)((n << 4) | elem_type));
    } else {
        pq_tw_byte1(w, (uint8_t)(0xf0 | elem_type));
        pq_tw_varint(w, n);
    }
}

static inline void pq_tw_bool_elem(pq_tw *w, bool v) { pq_tw_byte1(w, v ? PQ_T_TRUE : PQ_T_FALSE); }

/* Whole fields. */
static inline void pq_tw_i32_field(pq_tw *w, int16_t *last, int16_t id, int32_t v)
{
    pq_tw_field(w, last, id, PQ_T_I32);
    pq_tw_zigzag(w, v);
}
static inline void pq_tw_i64_field(pq_tw *w, int16_t *last, int16_t id, int64_t v)
{
    pq_tw_field(w, last, id, PQ_T_I64);
    pq_tw_zigzag(w, v);
}
static inline void pq_tw_i16_field(pq_tw *w, int16_t *last, int16_t id, int16_t v)
{
    pq_tw_field(w, last, id, PQ_T_I16);
    pq_tw_zigzag(w, v);
}
static inline void pq_tw_byte_field(pq_tw *w, int16_t *last, int16_t id, int8_t v)
{
    pq_tw_field(w, last, id, PQ_T_BYTE);
    pq_tw_byte1(w, (uint8_t)v);
}
static inline void pq_tw_bool_field(pq_tw *w, int16_t *last, int16_t id, bool v)
{
    pq_tw_field(w, last, id, v ? PQ_T_TRUE : PQ_T_FALSE);
}
static inline void pq_tw_binary_field(pq_tw *w, int16_t *last, int16_t id, const void *p,
                                      size_t n)
{
    pq_tw_field(w, last, id, PQ_T_BINARY);
    pq_tw_binary(w, p, n);
}
static inline void pq_tw_string_field(pq_tw *w, int16_t *last, int16_t id, const char *s)
{
    pq_tw_binary_field(w, last, id, s, strlen(s));
}

#endif
