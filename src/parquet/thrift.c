/*
 * parquet/thrift.c - Thrift compact protocol: the out-of-line reader parts
 * (multi-byte varints, binary, containers, skipping) and error messages.
 *
 * The wire format and the reader/writer contracts are described in thrift.h.
 * Invariants kept here:
 *   - nothing reads past r->end: every primitive compares against the
 *     remaining length before touching a byte;
 *   - a container header is rejected when its element count cannot fit in the
 *     remaining bytes (every element takes >= 1 byte; a map pair >= 2), so no
 *     caller ever sizes an allocation from an impossible count;
 *   - pq_tr_skip recurses at most PQ_THRIFT_MAX_DEPTH levels and consumes at
 *     least one byte per element, so it terminates within len steps.
 */
#include "parquet/thrift.h"

#include <stdio.h>

void pq_tr_fail(pq_tr *r, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    HS_CORRUPT_AT(r->err, "%s: %s at byte %zu", r->what, msg, pq_tr_offset(r));
}

void pq_tr_fail_eof(pq_tr *r, const char *item)
{
    HS_CORRUPT_AT(r->err, "%s: truncated: %s at byte %zu runs past the end (%zu bytes)",
                         r->what, item, pq_tr_offset(r), (size_t)(r->end - r->base));
}

hs_status pq_tr_varint_slow(pq_tr *r, uint64_t *v)
{
    uint64_t x = 0;
    const uint8_t *p = r->p;
    for (int shift = 0; shift < 70; shift += 7) {
        if (HS_UNLIKELY(p >= r->end))
            return pq_tr_err_eof(r, "varint");
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return pq_tr_err(r, "varint overflows 64 bits");
        x |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            r->p = p;
            *v = x;
            return HS_OK;
        }
    }
    return pq_tr_err(r, "varint longer than 10 bytes");
}

hs_status pq_tr_double(pq_tr *r, double *v)
{
    if (HS_UNLIKELY(pq_tr_remaining(r) < 8))
        return pq_tr_err_eof(r, "double");
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--)
        u = (u << 8) | r->p[i];
    memcpy(v, &u, sizeof u);
    r->p += 8;
    return HS_OK;
}

hs_status pq_tr_binary(pq_tr *r, const uint8_t **p, uint32_t *len)
{
    size_t at = pq_tr_offset(r);
    uint64_t n;
    HS_TRY(pq_tr_varint(r, &n));
    if (HS_UNLIKELY(n > pq_tr_remaining(r)))
        return HS_CORRUPT_AT(r->err,
                             "%s: binary of %llu bytes at byte %zu exceeds remaining %zu bytes",
                             r->what, (unsigned long long)n, at, pq_tr_remaining(r));
    if (HS_UNLIKELY(n > UINT32_MAX))
        return pq_tr_err(r, "binary of %llu bytes too large", (unsigned long long)n);
    *p = r->p;
    *len = (uint32_t)n;
    r->p += n;
    return HS_OK;
}

/* Smallest encoding of one value of a compact type, in bytes. */
static size_t min_size(uint8_t type)
{
    switch (type) {
    case PQ_T_DOUBLE: return 8;
    case PQ_T_UUID: return 16;
    default: return 1;
    }
}

static hs_status check_count(pq_tr *r, size_t at, const char *kind, uint64_t n, size_t each)
{
    size_t rem = pq_tr_remaining(r);
    if (HS_UNLIKELY(n > rem / each || n > INT32_MAX))
        return HS_CORRUPT_AT(r->err,
                             "%s: %s of %llu elements at byte %zu exceeds remaining %zu bytes",
                             r->what, kind, (unsigned long long)n, at, rem);
    return HS_OK;
}

hs_status pq_tr_list(pq_tr *r, uint8_t *elem_type, uint32_t *n)
{
    size_t at = pq_tr_offset(r);
    if (HS_UNLIKELY(r->p >= r->end))
        return pq_tr_err_eof(r, "list header");
    uint8_t b = *r->p++;
    uint8_t t = b & 0x0f;
    uint64_t count = b >> 4;
    if (count == 15)
        HS_TRY(pq_tr_varint(r, &count));
    if (HS_UNLIKELY(t == PQ_T_STOP || t > PQ_T_UUID))
        return HS_CORRUPT_AT(r->err, "%s: list at byte %zu has invalid element type %u",
                             r->what, at, t);
    HS_TRY(check_count(r, at, "list", count, min_size(t)));
    *elem_type = t;
    *n = (uint32_t)count;
    return HS_OK;
}

hs_status pq_tr_map(pq_tr *r, uint8_t *ktype, uint8_t *vtype, uint32_t *n)
{
    size_t at = pq_tr_offset(r);
    uint64_t count;
    HS_TRY(pq_tr_varint(r, &count));
    *ktype = *vtype = 0;
    *n = 0;
    if (count == 0)
        return HS_OK;
    if (HS_UNLIKELY(r->p >= r->end))
        return pq_tr_err_eof(r, "map types");
    uint8_t b = *r->p++;
    uint8_t kt = b >> 4, vt = b & 0x0f;
    if (HS_UNLIKELY(kt == PQ_T_STOP || kt > PQ_T_UUID || vt == PQ_T_STOP || vt > PQ_T_UUID))
        return HS_CORRUPT_AT(r->err, "%s: map at byte %zu has invalid types 0x%02x", r->what,
                             at, b);
    HS_TRY(check_count(r, at, "map", count, min_size(kt) + min_size(vt)));
    *ktype = kt;
    *vtype = vt;
    *n = (uint32_t)count;
    return HS_OK;
}

__attribute__((noinline)) static hs_status skip_struct(pq_tr *r)
{
    int16_t last = 0, id = 0;
    uint8_t t = PQ_T_STOP;
    for (;;) {
        HS_TRY(pq_tr_field(r, &last, &id, &t));
        if (t == PQ_T_STOP)
            return HS_OK;
        HS_TRY(pq_tr_skip(r, t));
    }
}

hs_status pq_tr_skip(pq_tr *r, uint8_t type)
{
    uint64_t u;
    const uint8_t *p;
    uint32_t n, i, len;
    uint8_t et, kt, vt;
    hs_status st;

    switch (type) {
    case PQ_T_TRUE:
    case PQ_T_FALSE:
        return HS_OK; /* value is in the field header */
    case PQ_T_BYTE:
        if (HS_UNLIKELY(r->p >= r->end))
            return pq_tr_err_eof(r, "byte");
        r->p++;
        return HS_OK;
    case PQ_T_I16:
    case PQ_T_I32:
    case PQ_T_I64:
        return pq_tr_varint(r, &u);
    case PQ_T_DOUBLE:
        if (HS_UNLIKELY(pq_tr_remaining(r) < 8))
            return pq_tr_err_eof(r, "double");
        r->p += 8;
        return HS_OK;
    case PQ_T_UUID:
        if (HS_UNLIKELY(pq_tr_remaining(r) < 16))
            return pq_tr_err_eof(r, "uuid");
        r->p += 16;
        return HS_OK;
    case PQ_T_BINARY:
        return pq_tr_binary(r, &p, &len);
    case PQ_T_STRUCT:
        HS_TRY(pq_tr_enter(r));
        st = skip_struct(r);
        pq_tr_leave(r);
        return st;
    case PQ_T_LIST:
    case PQ_T_SET:
        HS_TRY(pq_tr_list(r, &et, &n));
        HS_TRY(pq_tr_enter(r));
        st = HS_OK;
        for (i = 0; i < n && st == HS_OK; i++) {
            if (et == PQ_T_TRUE || et == PQ_T_FALSE) {
                bool b;
                st = pq_tr_bool_elem(r, &b);
            } else {
                st = pq_tr_skip(r, et);
            }
        }
        pq_tr_leave(r);
        return st;
    case PQ_T_MAP:
        HS_TRY(pq_tr_map(r, &kt, &vt, &n));
        HS_TRY(pq_tr_enter(r));
        st = HS_OK;
        for (i = 0; i < n && st == HS_OK; i++) {
            bool b;
            st = pq_tr_is_bool(kt) ? pq_tr_bool_elem(r, &b) : pq_tr_skip(r, kt);
            if (st == HS_OK)
                st = pq_tr_is_bool(vt) ? pq_tr_bool_elem(r, &b) : pq_tr_skip(r, vt);
        }
        pq_tr_leave(r);
        return st;
    default:
        return pq_tr_err(r, "cannot skip value of unknown type %u", type);
    }
}
