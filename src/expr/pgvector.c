/*
 * expr/pgvector.c - pgvector 0.8.1's types as values (see pgvector.h).
 *
 * Structure: the SQLSTATE table of the messages; PostgreSQL's float output;
 * the text input functions (ports of vector_in, halfvec_in, sparsevec_in and
 * PostgreSQL's bit_in, with their checks in their order, so the first error
 * is the same error); output; operators and functions, which check
 * dimensions and hand the arithmetic to pgvector_kern.c; casts; the
 * aggregates.  Messages are pgvector's errmsg texts, word for word.
 */
#include "expr/pgvector.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "expr/pgvector_kern.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* SQLSTATEs                                                           */

const char *pv_sqlstate(const char *msg)
{
    static const struct { const char *state, *text; bool prefix; } t[] = {
        {"22P02", "invalid input syntax for type", true},
        {"22P02", "\" is not a valid binary digit", false},
        {"22P02", "\" is not a valid hexadecimal digit", false},
        {"22P02", "ran out of buffer", true},
        {"22P02", "malformed array literal", true},
        {"22003", "\" is out of range for type", false},
        {"22003", "value out of range: ", true},
        {"54000", " cannot have more than ", false},
        {"54000", "sparsevec cannot have more elements than dimensions", true},
        {"54000", "bit string length exceeds the maximum allowed", true},
        {"22023", "dimensions for type ", true},
        {"22023", "invalid type modifier", true},
        {"22023", "length for type bit ", true},
        {"22026", "bit string length ", true},
        {"22004", "array must not contain nulls", true},
        {"22000", " must have at least 1 dimension", false},
        {"22000", "different ", true},
        {"22000", "expected ", true},
        {"22000", "NaN not allowed in ", true},
        {"22000", "infinite value not allowed in ", true},
        {"22000", "sparsevec ind", true},
        {"22000", "sparsevec cannot have negative", true},
        {"22000", "array must be 1-D", true},
        {"22000", "unsupported array type", true},
        {"42725", " is not unique", false},
        {"42883", "operator does not exist", true},
        {"42883", " does not exist", false},
        {"42846", "cannot cast type", true},
        {"42804", "argument of ", true},
        {"0A000", " is not supported", false},
    };
    if (!msg)
        return "XX000";
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t n = strlen(t[i].text);
        if (t[i].prefix ? strncmp(msg, t[i].text, n) == 0 : strstr(msg, t[i].text) != NULL)
            return t[i].state;
    }
    return "XX000";
}

const char *pv_type_name(pv_type t)
{
    switch (t) {
    case PV_VECTOR: return "vector";
    case PV_HALFVEC: return "halfvec";
    case PV_SPARSEVEC: return "sparsevec";
    case PV_BIT: return "bit";
    }
    return "?";
}

static hs_status perr(hs_error *err, const char *fmt, ...) HS_PRINTF(2, 3);
static hs_status perr(hs_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hs_status st = hs_err_vset(err, HS_INVALID, fmt, ap);
    va_end(ap);
    return st;
}

static hs_status overflow_err(hs_error *err, int code)
{
    return perr(err, code == 2 ? "value out of range: underflow" : "value out of range: overflow");
}

/* 8-aligned allocation in the arena (blobs are read as float / int32). */
static void *alloc8(hs_arena *a, size_t n)
{
    return hs_arena_alloc(a, n ? n : 1);
}

static hs_status nomem(hs_error *err, size_t n) { return hs_err_nomem(err, n); }

/* ------------------------------------------------------------------ */
/* blob access                                                         */

typedef struct sparse_hdr {
    int32_t dim, nnz;
} sparse_hdr;

static pvk_sparse sparse_of(pv_val v)
{
    pvk_sparse s;
    int32_t h[2];
    memcpy(h, v.p, 8);
    s.dim = h[0];
    s.nnz = h[1];
    s.idx = (const int32_t *)(v.p + 8);
    s.val = (const float *)(v.p + 8 + 4 * (size_t)s.nnz);
    return s;
}

static size_t sparse_size(int64_t nnz) { return 8 + 8 * (size_t)nnz; }

static uint8_t *sparse_new(hs_arena *a, int32_t dim, int32_t nnz, int32_t **idx, float **val)
{
    uint8_t *p = alloc8(a, sparse_size(nnz));
    if (!p)
        return NULL;
    int32_t h[2] = {dim, nnz};
    memcpy(p, h, 8);
    *idx = (int32_t *)(p + 8);
    *val = (float *)(p + 8 + 4 * (size_t)nnz);
    return p;
}

static int32_t bit_len(pv_val v)
{
    int32_t n;
    memcpy(&n, v.p, 4);
    return n;
}

static uint8_t *bit_new(hs_arena *a, int32_t nbits, uint8_t **bits)
{
    size_t nb = ((size_t)nbits + 7) / 8;
    uint8_t *p = alloc8(a, 4 + nb);
    if (!p)
        return NULL;
    memcpy(p, &nbits, 4);
    memset(p + 4, 0, nb);
    *bits = p + 4;
    return p;
}

int64_t pv_dims(pv_type t, pv_val v)
{
    switch (t) {
    case PV_VECTOR: return (int64_t)(v.n / 4);
    case PV_HALFVEC: return (int64_t)(v.n / 2);
    case PV_SPARSEVEC: return v.n >= 8 ? sparse_of(v).dim : 0;
    case PV_BIT: return v.n >= 4 ? bit_len(v) : 0;
    }
    return 0;
}

bool pv_valid(pv_type t, pv_val v)
{
    if (!v.p && v.n)
        return false;
    switch (t) {
    case PV_VECTOR: {
        if (v.n % 4 || v.n == 0 || v.n / 4 > PV_VECTOR_MAX_DIM)
            return false;
        for (size_t i = 0; i < v.n / 4; i++) {
            float f;
            memcpy(&f, v.p + 4 * i, 4);
            if (!isfinite(f))
                return false;
        }
        return true;
    }
    case PV_HALFVEC: {
        if (v.n % 2 || v.n == 0 || v.n / 2 > PV_HALFVEC_MAX_DIM)
            return false;
        for (size_t i = 0; i < v.n / 2; i++) {
            uint16_t h;
            memcpy(&h, v.p + 2 * i, 2);
            if (pvk_half_is_inf(h) || pvk_half_is_nan(h))
                return false;
        }
        return true;
    }
    case PV_SPARSEVEC: {
        if (v.n < 8)
            return false;
        int32_t h[2];
        memcpy(h, v.p, 8);
        if (h[0] < 1 || h[0] > PV_SPARSEVEC_MAX_DIM || h[1] < 0 || h[1] > h[0] ||
            v.n != sparse_size(h[1]))
            return false;
        for (int32_t i = 0; i < h[1]; i++) {
            int32_t ix, prev = -1;
            float f;
            memcpy(&ix, v.p + 8 + 4 * (size_t)i, 4);
            if (i > 0)
                memcpy(&prev, v.p + 8 + 4 * (size_t)(i - 1), 4);
            memcpy(&f, v.p + 8 + 4 * (size_t)h[1] + 4 * (size_t)i, 4);
            if (ix < 0 || ix >= h[0] || (i > 0 && ix <= prev) || !isfinite(f) || f == 0)
                return false;
        }
        return true;
    }
    case PV_BIT: {
        if (v.n < 4)
            return false;
        int32_t nb = bit_len(v);
        if (nb < 0 || nb > PV_BIT_MAX_LEN || v.n != 4 + ((size_t)nb + 7) / 8)
            return false;
        if (nb % 8 && (v.p[4 + nb / 8] & (0xFF >> (nb % 8))))
            return false; /* padding bits must be zero */
        return true;
    }
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* float output (PostgreSQL's float_to_shortest_decimal / double_...) */

/* The shortest digits that read back to v, as PostgreSQL's Ryu prints them
 * (fixed notation for decimal exponents in [-4, fixed_max), else d.ddde+XX). */
static int fmt_shortest(double v, bool single, char *dst)
{
    if (isnan(v))
        return sprintf(dst, "NaN");
    if (isinf(v))
        return sprintf(dst, v < 0 ? "-Infinity" : "Infinity");
    if (v == 0)
        return sprintf(dst, signbit(v) ? "-0" : "0");
    char tmp[48];
    int maxp = single ? 9 : 17;
    for (int p = 1; p <= maxp; p++) {
        hs_snprintf_c(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (p == maxp)
            break;
        if (single ? hs_strtof(tmp, NULL) == (float)v : hs_strtod(tmp, NULL) == v)
            break;
    }
    /* tmp: [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, k = 0;
    bool neg = tmp[0] == '-';
    if (neg)
        k++;
    for (; tmp[k] && tmp[k] != 'e'; k++)
        if (tmp[k] >= '0' && tmp[k] <= '9')
            digits[nd++] = tmp[k];
    int exp = atoi(tmp + k + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    int o = 0;
    if (neg)
        dst[o++] = '-';
    int fixed_max = single ? 6 : 15;
    if (exp >= -4 && exp < fixed_max) {
        if (exp < 0) {
            dst[o++] = '0';
            dst[o++] = '.';
            for (int i = 0; i < -exp - 1; i++)
                dst[o++] = '0';
            for (int i = 0; i < nd; i++)
                dst[o++] = digits[i];
        } else {
            for (int i = 0; i <= exp || i < nd; i++) {
                if (i == exp + 1)
                    dst[o++] = '.';
                dst[o++] = i < nd ? digits[i] : '0';
            }
        }
    } else {
        dst[o++] = digits[0];
        if (nd > 1) {
            dst[o++] = '.';
            for (int i = 1; i < nd; i++)
                dst[o++] = digits[i];
        }
        o += sprintf(dst + o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
    dst[o] = '\0';
    return o;
}

int pv_fmt_float4(float v, char *dst) { return fmt_shortest((double)v, true, dst); }
int pv_fmt_float8(double v, char *dst) { return fmt_shortest(v, false, dst); }

/* ------------------------------------------------------------------ */
/* text input                                                          */

static bool pg_isspace(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

static hs_status check_dim(pv_type t, int64_t dim, hs_error *err)
{
    int64_t max = t == PV_SPARSEVEC ? PV_SPARSEVEC_MAX_DIM : PV_VECTOR_MAX_DIM;
    if (dim < 1)
        return perr(err, "%s must have at least 1 dimension", pv_type_name(t));
    if (dim > max)
        return perr(err, "%s cannot have more than %lld dimensions", pv_type_name(t), (long long)max);
    return HS_OK;
}

static hs_status check_expected(int32_t typmod, int64_t dim, hs_error *err)
{
    if (typmod != -1 && typmod != dim)
        return perr(err, "expected %d dimensions, not %lld", typmod, (long long)dim);
    return HS_OK;
}

hs_status pv_typmod_in(pv_type t, int64_t typmod, hs_error *err)
{
    if (t == PV_BIT) {
        if (typmod < 1)
            return perr(err, "length for type bit must be at least 1");
        if (typmod > PV_BIT_MAX_LEN)
            return perr(err, "length for type bit cannot exceed %d", PV_BIT_MAX_LEN);
        return HS_OK;
    }
    int64_t max = t == PV_SPARSEVEC ? PV_SPARSEVEC_MAX_DIM : PV_VECTOR_MAX_DIM;
    if (typmod < 1)
        return perr(err, "dimensions for type %s must be at least 1", pv_type_name(t));
    if (typmod > max)
        return perr(err, "dimensions for type %s cannot exceed %lld", pv_type_name(t), (long long)max);
    return HS_OK;
}

hs_status pv_check_typmod(pv_type t, pv_val v, int32_t typmod, hs_error *err)
{
    if (t == PV_BIT) {
        if (typmod > 0 && bit_len(v) != typmod)
            return hs_err_set(err, HS_INVALID, "bit string length %d does not match type bit(%d)",
                              bit_len(v), typmod);
        return HS_OK;
    }
    return check_expected(typmod, pv_dims(t, v), err);
}

/* "%s" of the literal, as the messages quote it (cut to fit the error). */
#define LIT_MAX 300

static hs_status syntax(hs_error *err, pv_type t, const char *lit)
{
    return perr(err, "invalid input syntax for type %s: \"%.*s\"", pv_type_name(t), LIT_MAX, lit);
}

static hs_status range_err(hs_error *err, pv_type t, const char *from, const char *to)
{
    return perr(err, "\"%.*s\" is out of range for type %s", (int)(to - from > 100 ? 100 : to - from), from,
                pv_type_name(t));
}

/* vector_in and halfvec_in */
static hs_status dense_in(pv_type t, const char *lit, int32_t typmod, hs_arena *a, pv_val *out,
                          hs_error *err)
{
    bool half = t == PV_HALFVEC;
    int max = half ? PV_HALFVEC_MAX_DIM : PV_VECTOR_MAX_DIM;
    size_t es = half ? 2 : 4;
    const char *pt = lit;
    while (pg_isspace(*pt))
        pt++;
    if (*pt != '[')
        return syntax(err, t, lit);
    pt++;
    while (pg_isspace(*pt))
        pt++;
    if (*pt == ']')
        return perr(err, "%s must have at least 1 dimension", pv_type_name(t));
    /* at most one element per comma, plus one */
    size_t cap = 1;
    for (const char *q = pt; *q; q++)
        cap += *q == ',';
    if (cap > (size_t)max + 1)
        cap = (size_t)max + 1;
    uint8_t *x = alloc8(a, cap * es);
    if (!x)
        return nomem(err, cap * es);
    int dim = 0;
    for (;;) {
        if (dim == max)
            return perr(err, "%s cannot have more than %d dimensions", pv_type_name(t), max);
        while (pg_isspace(*pt))
            pt++;
        if (*pt == '\0')
            return syntax(err, t, lit);
        char *end;
        errno = 0;
        float val = hs_strtof(pt, &end);
        if (end == pt)
            return syntax(err, t, lit);
        if (half) {
            uint16_t h = pvk_float_to_half(val);
            if ((errno == ERANGE && isinf(val)) || (pvk_half_is_inf(h) && !isinf(val)))
                return range_err(err, t, pt, end);
            if (pvk_half_is_nan(h))
                return perr(err, "NaN not allowed in halfvec");
            if (pvk_half_is_inf(h))
                return perr(err, "infinite value not allowed in halfvec");
            memcpy(x + 2 * (size_t)dim, &h, 2);
        } else {
            if (errno == ERANGE && isinf(val))
                return range_err(err, t, pt, end);
            if (isnan(val))
                return perr(err, "NaN not allowed in vector");
            if (isinf(val))
                return perr(err, "infinite value not allowed in vector");
            memcpy(x + 4 * (size_t)dim, &val, 4);
        }
        dim++;
        pt = end;
        while (pg_isspace(*pt))
            pt++;
        if (*pt == ',') {
            pt++;
        } else if (*pt == ']') {
            pt++;
            break;
        } else {
            return syntax(err, t, lit);
        }
    }
    while (pg_isspace(*pt))
        pt++;
    if (*pt != '\0')
        return syntax(err, t, lit);
    HS_TRY(check_dim(t, dim, err));
    HS_TRY(check_expected(typmod, dim, err));
    out->p = x;
    out->n = (size_t)dim * es;
    return HS_OK;
}

typedef struct sp_elem {
    int32_t index;
    float value;
} sp_elem;

static int cmp_sp(const void *a, const void *b)
{
    int32_t x = ((const sp_elem *)a)->index, y = ((const sp_elem *)b)->index;
    return x < y ? -1 : x > y;
}

/* sparsevec_in */
static hs_status sparse_in(const char *lit, int32_t typmod, hs_arena *a, pv_val *out, hs_error *err)
{
    int max_nnz = 1;
    for (const char *q = lit; *q; q++)
        if (*q == ',')
            max_nnz++;
    if (max_nnz > PV_SPARSEVEC_MAX_NNZ)
        return perr(err, "sparsevec cannot have more than %d non-zero elements", PV_SPARSEVEC_MAX_NNZ);
    sp_elem *el = alloc8(a, (size_t)max_nnz * sizeof *el);
    if (!el)
        return nomem(err, (size_t)max_nnz * sizeof *el);
    int nnz = 0;
    const char *pt = lit;
    char *end;
    while (pg_isspace(*pt))
        pt++;
    if (*pt != '{')
        return syntax(err, PV_SPARSEVEC, lit);
    pt++;
    while (pg_isspace(*pt))
        pt++;
    if (*pt == '}') {
        pt++;
    } else {
        for (;;) {
            if (nnz == max_nnz)
                return perr(err, "ran out of buffer: \"%.*s\"", LIT_MAX, lit);
            while (pg_isspace(*pt))
                pt++;
            if (*pt == '\0')
                return syntax(err, PV_SPARSEVEC, lit);
            long index = strtol(pt, &end, 10);
            if (end == pt)
                return syntax(err, PV_SPARSEVEC, lit);
            if (index > INT_MAX)
                index = INT_MAX;
            else if (index < INT_MIN + 1)
                index = INT_MIN + 1;
            pt = end;
            while (pg_isspace(*pt))
                pt++;
            if (*pt != ':')
                return syntax(err, PV_SPARSEVEC, lit);
            pt++;
            while (pg_isspace(*pt))
                pt++;
            errno = 0;
            float value = hs_strtof(pt, &end);
            if (end == pt)
                return syntax(err, PV_SPARSEVEC, lit);
            if (errno == ERANGE && (value == 0 || isinf(value)))
                return range_err(err, PV_SPARSEVEC, pt, end);
            if (isnan(value))
                return perr(err, "NaN not allowed in sparsevec");
            if (isinf(value))
                return perr(err, "infinite value not allowed in sparsevec");
            if (value != 0) {
                el[nnz].index = (int32_t)(index - 1);
                el[nnz].value = value;
                nnz++;
            }
            pt = end;
            while (pg_isspace(*pt))
                pt++;
            if (*pt == ',') {
                pt++;
            } else if (*pt == '}') {
                pt++;
                break;
            } else {
                return syntax(err, PV_SPARSEVEC, lit);
            }
        }
    }
    while (pg_isspace(*pt))
        pt++;
    if (*pt != '/')
        return syntax(err, PV_SPARSEVEC, lit);
    pt++;
    while (pg_isspace(*pt))
        pt++;
    long dim = strtol(pt, &end, 10);
    if (end == pt)
        return syntax(err, PV_SPARSEVEC, lit);
    if (dim > INT_MAX)
        dim = INT_MAX;
    else if (dim < INT_MIN)
        dim = INT_MIN;
    pt = end;
    while (pg_isspace(*pt))
        pt++;
    if (*pt != '\0')
        return syntax(err, PV_SPARSEVEC, lit);
    HS_TRY(check_dim(PV_SPARSEVEC, dim, err));
    HS_TRY(check_expected(typmod, dim, err));
    /* pgvector sorts with qsort (not stable); only the order of equal
     * indices could differ, and those are an error below */
    qsort(el, (size_t)nnz, sizeof *el, cmp_sp);
    int32_t *idx;
    float *val;
    uint8_t *p = sparse_new(a, (int32_t)dim, nnz, &idx, &val);
    if (!p)
        return nomem(err, sparse_size(nnz));
    for (int i = 0; i < nnz; i++) {
        idx[i] = el[i].index;
        val[i] = el[i].value;
        if (idx[i] < 0 || idx[i] >= dim)
            return perr(err, "sparsevec index out of bounds");
        if (i > 0) {
            if (idx[i] < idx[i - 1])
                return perr(err, "sparsevec indices must be in ascending order");
            if (idx[i] == idx[i - 1])
                return perr(err, "sparsevec indices must not contain duplicates");
        }
    }
    out->p = p;
    out->n = sparse_size(nnz);
    return HS_OK;
}

/* Length in bytes of the UTF-8 character at s (pg_mblen, at least 1). */
static int mblen_utf8(const char *s)
{
    unsigned char c = (unsigned char)*s;
    int n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    for (int i = 1; i < n; i++)
        if (!s[i])
            return i;
    return n;
}

/* PostgreSQL's bit_in */
static hs_status bit_in(const char *s, int32_t typmod, hs_arena *a, pv_val *out, hs_error *err)
{
    bool bin = true;
    const char *sp = s;
    if (s[0] == 'b' || s[0] == 'B') {
        sp = s + 1;
    } else if (s[0] == 'x' || s[0] == 'X') {
        bin = false;
        sp = s + 1;
    }
    size_t slen = strlen(sp);
    int64_t bitlen;
    if (bin) {
        if (slen > PV_BIT_MAX_LEN)
            return perr(err, "bit string length exceeds the maximum allowed (%d)", PV_BIT_MAX_LEN);
        bitlen = (int64_t)slen;
    } else {
        if (slen > PV_BIT_MAX_LEN / 4)
            return perr(err, "bit string length exceeds the maximum allowed (%d)", PV_BIT_MAX_LEN);
        bitlen = (int64_t)slen * 4;
    }
    if (typmod <= 0)
        typmod = (int32_t)bitlen;
    else if (bitlen != typmod)
        return perr(err, "bit string length %lld does not match type bit(%d)", (long long)bitlen, typmod);
    uint8_t *bits;
    uint8_t *p = bit_new(a, (int32_t)bitlen, &bits);
    if (!p)
        return nomem(err, (size_t)bitlen / 8 + 5);
    if (bin) {
        for (size_t i = 0; i < slen; i++) {
            if (sp[i] == '1')
                bits[i / 8] |= (uint8_t)(0x80 >> (i % 8));
            else if (sp[i] != '0')
                return perr(err, "\"%.*s\" is not a valid binary digit", mblen_utf8(sp + i), sp + i);
        }
    } else {
        for (size_t i = 0; i < slen; i++) {
            int c = (unsigned char)sp[i], v;
            if (c >= '0' && c <= '9')
                v = c - '0';
            else if (c >= 'A' && c <= 'F')
                v = c - 'A' + 10;
            else if (c >= 'a' && c <= 'f')
                v = c - 'a' + 10;
            else
                return perr(err, "\"%.*s\" is not a valid hexadecimal digit", mblen_utf8(sp + i), sp + i);
            bits[i / 2] |= (uint8_t)(i % 2 ? v : v << 4);
        }
    }
    out->p = p;
    out->n = 4 + ((size_t)bitlen + 7) / 8;
    return HS_OK;
}

hs_status pv_in(pv_type t, const char *s, size_t n, int32_t typmod, hs_arena *a, pv_val *out,
                hs_error *err)
{
    /* a C string: the text ends at the first NUL */
    const char *nul = memchr(s, '\0', n);
    size_t len = nul ? (size_t)(nul - s) : n;
    char *lit = hs_arena_strndup(a, s, len);
    if (!lit)
        return nomem(err, len);
    switch (t) {
    case PV_VECTOR: case PV_HALFVEC: return dense_in(t, lit, typmod, a, out, err);
    case PV_SPARSEVEC: return sparse_in(lit, typmod, a, out, err);
    case PV_BIT: return bit_in(lit, typmod, a, out, err);
    }
    return perr(err, "unknown pgvector type");
}

/* ------------------------------------------------------------------ */
/* text output                                                         */

hs_status pv_out(pv_type t, pv_val v, hs_buf *out)
{
    char num[40];
    switch (t) {
    case PV_VECTOR: case PV_HALFVEC: {
        size_t dim = t == PV_VECTOR ? v.n / 4 : v.n / 2;
        HS_TRY(hs_buf_reserve(out, dim * 16 + 2));
        HS_TRY(hs_buf_append_byte(out, '['));
        for (size_t i = 0; i < dim; i++) {
            float f;
            if (t == PV_VECTOR) {
                memcpy(&f, v.p + 4 * i, 4);
            } else {
                uint16_t h;
                memcpy(&h, v.p + 2 * i, 2);
                f = pvk_half_to_float(h);
            }
            if (i > 0)
                HS_TRY(hs_buf_append_byte(out, ','));
            int k = pv_fmt_float4(f, num);
            HS_TRY(hs_buf_append(out, num, (size_t)k));
        }
        return hs_buf_append_byte(out, ']');
    }
    case PV_SPARSEVEC: {
        pvk_sparse s = sparse_of(v);
        HS_TRY(hs_buf_append_byte(out, '{'));
        for (int32_t i = 0; i < s.nnz; i++) {
            int k = sprintf(num, "%s%d:", i > 0 ? "," : "", s.idx[i] + 1);
            HS_TRY(hs_buf_append(out, num, (size_t)k));
            float f;
            memcpy(&f, &s.val[i], 4);
            k = pv_fmt_float4(f, num);
            HS_TRY(hs_buf_append(out, num, (size_t)k));
        }
        int k = sprintf(num, "}/%d", s.dim);
        return hs_buf_append(out, num, (size_t)k);
    }
    case PV_BIT: {
        int32_t nb = bit_len(v);
        HS_TRY(hs_buf_reserve(out, (size_t)nb));
        for (int32_t i = 0; i < nb; i++)
            HS_TRY(hs_buf_append_byte(out, (v.p[4 + i / 8] >> (7 - i % 8)) & 1 ? '1' : '0'));
        return HS_OK;
    }
    }
    return HS_INVALID;
}

/* ------------------------------------------------------------------ */
/* operators and functions                                             */

static hs_status check_dims(pv_type t, pv_val a, pv_val b, hs_error *err)
{
    int64_t da = pv_dims(t, a), db = pv_dims(t, b);
    if (da == db)
        return HS_OK;
    if (t == PV_BIT)
        return perr(err, "different bit lengths %u and %u", (unsigned)da, (unsigned)db);
    return perr(err, "different %s dimensions %d and %d", pv_type_name(t), (int)da, (int)db);
}

hs_status pv_distance(pv_type t, pv_dist d, pv_val a, pv_val b, double *out, hs_error *err)
{
    HS_TRY(check_dims(t, a, b, err));
    if (t == PV_BIT) {
        uint32_t bytes = (uint32_t)((bit_len(a) + 7) / 8);
        *out = d == PV_JACCARD ? pvk_bit_jaccard(bytes, a.p + 4, b.p + 4)
                               : pvk_bit_hamming(bytes, a.p + 4, b.p + 4);
        return HS_OK;
    }
    if (t == PV_VECTOR) {
        int dim = (int)(a.n / 4);
        const float *x = (const float *)a.p, *y = (const float *)b.p;
        switch (d) {
        case PV_L2: *out = pvk_vec_l2(dim, x, y); break;
        case PV_NEG_IP: *out = pvk_vec_neg_ip(dim, x, y); break;
        case PV_COSINE: *out = pvk_vec_cosine(dim, x, y); break;
        case PV_L1: *out = pvk_vec_l1(dim, x, y); break;
        case PV_IP: *out = pvk_vec_ip(dim, x, y); break;
        case PV_L2_SQUARED: *out = pvk_vec_l2sq(dim, x, y); break;
        default: return perr(err, "distance not defined for vector");
        }
        return HS_OK;
    }
    if (t == PV_HALFVEC) {
        int dim = (int)(a.n / 2);
        const uint16_t *x = (const uint16_t *)a.p, *y = (const uint16_t *)b.p;
        switch (d) {
        case PV_L2: *out = pvk_half_l2(dim, x, y); break;
        case PV_NEG_IP: *out = pvk_half_neg_ip(dim, x, y); break;
        case PV_COSINE: *out = pvk_half_cosine(dim, x, y); break;
        case PV_L1: *out = pvk_half_l1(dim, x, y); break;
        case PV_IP: *out = pvk_half_ip(dim, x, y); break;
        case PV_L2_SQUARED: *out = pvk_half_l2sq(dim, x, y); break;
        default: return perr(err, "distance not defined for halfvec");
        }
        return HS_OK;
    }
    pvk_sparse x = sparse_of(a), y = sparse_of(b);
    switch (d) {
    case PV_L2: *out = pvk_sparse_l2(&x, &y); break;
    case PV_NEG_IP: *out = pvk_sparse_neg_ip(&x, &y); break;
    case PV_COSINE: *out = pvk_sparse_cosine(&x, &y); break;
    case PV_L1: *out = pvk_sparse_l1(&x, &y); break;
    case PV_IP: *out = pvk_sparse_ip(&x, &y); break;
    case PV_L2_SQUARED: *out = pvk_sparse_l2sq(&x, &y); break;
    default: return perr(err, "distance not defined for sparsevec");
    }
    return HS_OK;
}

hs_status pv_arith(pv_type t, int op, pv_val a, pv_val b, hs_arena *ar, pv_val *out, hs_error *err)
{
    if (op == '|') {
        if (t == PV_BIT) {
            int32_t la = bit_len(a), lb = bit_len(b);
            if ((int64_t)la + lb > PV_BIT_MAX_LEN)
                return perr(err, "bit string length exceeds the maximum allowed (%d)", PV_BIT_MAX_LEN);
            uint8_t *bits;
            uint8_t *p = bit_new(ar, la + lb, &bits);
            if (!p)
                return nomem(err, (size_t)(la + lb) / 8 + 5);
            for (int32_t i = 0; i < la + lb; i++) {
                const uint8_t *src = i < la ? a.p + 4 : b.p + 4;
                int32_t k = i < la ? i : i - la;
                if ((src[k / 8] >> (7 - k % 8)) & 1)
                    bits[i / 8] |= (uint8_t)(0x80 >> (i % 8));
            }
            out->p = p;
            out->n = 4 + ((size_t)(la + lb) + 7) / 8;
            return HS_OK;
        }
        int64_t dim = pv_dims(t, a) + pv_dims(t, b);
        HS_TRY(check_dim(t, dim, err));
        uint8_t *p = alloc8(ar, a.n + b.n);
        if (!p)
            return nomem(err, a.n + b.n);
        memcpy(p, a.p, a.n);
        memcpy(p + a.n, b.p, b.n);
        out->p = p;
        out->n = a.n + b.n;
        return HS_OK;
    }
    if (t != PV_VECTOR && t != PV_HALFVEC)
        return perr(err, "operator does not exist: %s %c %s", pv_type_name(t), op, pv_type_name(t));
    HS_TRY(check_dims(t, a, b, err));
    uint8_t *p = alloc8(ar, a.n);
    if (!p)
        return nomem(err, a.n);
    int rc = t == PV_VECTOR
                 ? pvk_vec_arith(op, (int)(a.n / 4), (const float *)a.p, (const float *)b.p, (float *)p)
                 : pvk_half_arith(op, (int)(a.n / 2), (const uint16_t *)a.p, (const uint16_t *)b.p,
                                  (uint16_t *)p);
    if (rc)
        return overflow_err(err, rc);
    out->p = p;
    out->n = a.n;
    return HS_OK;
}

int pv_cmp(pv_type t, pv_val a, pv_val b)
{
    switch (t) {
    case PV_VECTOR: case PV_HALFVEC: {
        int64_t da = pv_dims(t, a), db = pv_dims(t, b), dim = da < db ? da : db;
        for (int64_t i = 0; i < dim; i++) {
            float x, y;
            if (t == PV_VECTOR) {
                memcpy(&x, a.p + 4 * i, 4);
                memcpy(&y, b.p + 4 * i, 4);
            } else {
                uint16_t hx, hy;
                memcpy(&hx, a.p + 2 * i, 2);
                memcpy(&hy, b.p + 2 * i, 2);
                x = pvk_half_to_float(hx);
                y = pvk_half_to_float(hy);
            }
            if (x < y)
                return -1;
            if (x > y)
                return 1;
        }
        return da < db ? -1 : da > db;
    }
    case PV_SPARSEVEC: {
        pvk_sparse x = sparse_of(a), y = sparse_of(b);
        int nnz = x.nnz < y.nnz ? x.nnz : y.nnz;
        for (int i = 0; i < nnz; i++) {
            if (x.idx[i] < y.idx[i])
                return x.val[i] < 0 ? -1 : 1;
            if (x.idx[i] > y.idx[i])
                return y.val[i] < 0 ? 1 : -1;
            if (x.val[i] < y.val[i])
                return -1;
            if (x.val[i] > y.val[i])
                return 1;
        }
        if (x.nnz < y.nnz && y.idx[nnz] < x.dim)
            return y.val[nnz] < 0 ? 1 : -1;
        if (x.nnz > y.nnz && x.idx[nnz] < y.dim)
            return x.val[nnz] < 0 ? -1 : 1;
        return x.dim < y.dim ? -1 : x.dim > y.dim;
    }
    case PV_BIT: {
        int32_t la = bit_len(a), lb = bit_len(b);
        size_t ba = ((size_t)la + 7) / 8, bb = ((size_t)lb + 7) / 8;
        int c = memcmp(a.p + 4, b.p + 4, ba < bb ? ba : bb);
        if (c == 0 && la != lb)
            return la < lb ? -1 : 1;
        return c < 0 ? -1 : c > 0;
    }
    }
    return 0;
}

double pv_norm(pv_type t, pv_val v)
{
    switch (t) {
    case PV_VECTOR: return pvk_vec_norm((int)(v.n / 4), (const float *)v.p);
    case PV_HALFVEC: return pvk_half_norm((int)(v.n / 2), (const uint16_t *)v.p);
    case PV_SPARSEVEC: {
        pvk_sparse s = sparse_of(v);
        return pvk_sparse_norm(&s);
    }
    default: return 0;
    }
}

hs_status pv_l2_normalize(pv_type t, pv_val v, hs_arena *ar, pv_val *out, hs_error *err)
{
    if (t == PV_VECTOR || t == PV_HALFVEC) {
        uint8_t *p = alloc8(ar, v.n);
        if (!p)
            return nomem(err, v.n);
        int rc = t == PV_VECTOR ? pvk_vec_normalize((int)(v.n / 4), (const float *)v.p, (float *)p)
                                : pvk_half_normalize((int)(v.n / 2), (const uint16_t *)v.p, (uint16_t *)p);
        if (rc)
            return overflow_err(err, rc);
        out->p = p;
        out->n = v.n;
        return HS_OK;
    }
    pvk_sparse s = sparse_of(v);
    float *rx = alloc8(ar, 4 * (size_t)(s.nnz ? s.nnz : 1));
    if (!rx)
        return nomem(err, 4 * (size_t)s.nnz);
    int pos = 0;
    if (pvk_sparse_normalize(&s, rx, &pos))
        return overflow_err(err, 1);
    int zeros = 0;
    for (int i = 0; i < s.nnz && pos; i++)
        zeros += rx[i] == 0;
    int nnz = pos ? s.nnz - zeros : s.nnz;
    int32_t *idx;
    float *val;
    uint8_t *p = sparse_new(ar, s.dim, nnz, &idx, &val);
    if (!p)
        return nomem(err, sparse_size(nnz));
    int j = 0;
    for (int i = 0; i < s.nnz; i++) {
        if (pos && rx[i] == 0)
            continue;
        idx[j] = s.idx[i];
        val[j] = pos ? rx[i] : 0; /* zero norm: pgvector returns zeros at the same indices */
        j++;
    }
    out->p = p;
    out->n = sparse_size(nnz);
    return HS_OK;
}

hs_status pv_binary_quantize(pv_type t, pv_val v, hs_arena *ar, pv_val *out, hs_error *err)
{
    int dim = (int)pv_dims(t, v);
    uint8_t *bits;
    uint8_t *p = bit_new(ar, dim, &bits);
    if (!p)
        return nomem(err, (size_t)dim / 8 + 5);
    if (t == PV_VECTOR)
        pvk_vec_quantize(dim, (const float *)v.p, bits);
    else
        pvk_half_quantize(dim, (const uint16_t *)v.p, bits);
    out->p = p;
    out->n = 4 + ((size_t)dim + 7) / 8;
    return HS_OK;
}

hs_status pv_subvector(pv_type t, pv_val v, int64_t start64, int64_t count64, hs_arena *ar,
                       pv_val *out, hs_error *err)
{
    int32_t dim_a = (int32_t)pv_dims(t, v);
    if (start64 > INT32_MAX || start64 < INT32_MIN || count64 > INT32_MAX || count64 < INT32_MIN)
        return hs_err_set(err, HS_INVALID, "integer out of range");
    int32_t start = (int32_t)start64, count = (int32_t)count64, end;
    if (count < 1)
        return perr(err, "%s must have at least 1 dimension", pv_type_name(t));
    if (start > dim_a - count)
        end = dim_a + 1;
    else
        end = start + count;
    if (start < 1)
        start = 1;
    else if (start > dim_a)
        return perr(err, "%s must have at least 1 dimension", pv_type_name(t));
    int32_t dim = end - start;
    HS_TRY(check_dim(t, dim, err));
    size_t es = t == PV_VECTOR ? 4 : 2;
    uint8_t *p = alloc8(ar, (size_t)dim * es);
    if (!p)
        return nomem(err, (size_t)dim * es);
    memcpy(p, v.p + (size_t)(start - 1) * es, (size_t)dim * es);
    out->p = p;
    out->n = (size_t)dim * es;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* casts                                                               */

static hs_status half_of(float f, uint16_t *h, hs_error *err)
{
    if (pvk_float_to_half_checked(f, h)) {
        char num[40];
        pv_fmt_float4(f, num);
        return perr(err, "\"%s\" is out of range for type halfvec", num);
    }
    return HS_OK;
}

hs_status pv_convert(pv_type from, pv_type to, pv_val v, int32_t typmod, hs_arena *ar, pv_val *out,
                     hs_error *err)
{
    if (from == to) {
        HS_TRY(pv_check_typmod(to, v, typmod, err));
        *out = v;
        return HS_OK;
    }
    int64_t dim = pv_dims(from, v);
    HS_TRY(check_dim(to, dim, err));
    HS_TRY(check_expected(typmod, dim, err));
    if (to == PV_SPARSEVEC) {
        int nnz = 0;
        for (int64_t i = 0; i < dim; i++) {
            if (from == PV_VECTOR) {
                float f;
                memcpy(&f, v.p + 4 * i, 4);
                nnz += f != 0;
            } else {
                uint16_t h;
                memcpy(&h, v.p + 2 * i, 2);
                nnz += !pvk_half_is_zero(h);
            }
        }
        int32_t *idx;
        float *val;
        uint8_t *p = sparse_new(ar, (int32_t)dim, nnz, &idx, &val);
        if (!p)
            return nomem(err, sparse_size(nnz));
        int j = 0;
        for (int64_t i = 0; i < dim; i++) {
            float f;
            if (from == PV_VECTOR) {
                memcpy(&f, v.p + 4 * i, 4);
                if (f == 0)
                    continue;
            } else {
                uint16_t h;
                memcpy(&h, v.p + 2 * i, 2);
                if (pvk_half_is_zero(h))
                    continue;
                f = pvk_half_to_float(h);
            }
            idx[j] = (int32_t)i;
            val[j] = f;
            j++;
        }
        out->p = p;
        out->n = sparse_size(nnz);
        return HS_OK;
    }
    size_t es = to == PV_VECTOR ? 4 : 2;
    uint8_t *p = alloc8(ar, (size_t)dim * es);
    if (!p)
        return nomem(err, (size_t)dim * es);
    if (from == PV_SPARSEVEC) {
        memset(p, 0, (size_t)dim * es);
        pvk_sparse s = sparse_of(v);
        for (int32_t i = 0; i < s.nnz; i++) {
            float f = s.val[i];
            if (to == PV_VECTOR) {
                memcpy(p + 4 * (size_t)s.idx[i], &f, 4);
            } else {
                uint16_t h;
                HS_TRY(half_of(f, &h, err));
                memcpy(p + 2 * (size_t)s.idx[i], &h, 2);
            }
        }
    } else {
        for (int64_t i = 0; i < dim; i++) {
            if (to == PV_VECTOR) { /* halfvec -> vector */
                uint16_t h;
                memcpy(&h, v.p + 2 * i, 2);
                float f = pvk_half_to_float(h);
                memcpy(p + 4 * i, &f, 4);
            } else { /* vector -> halfvec */
                float f;
                uint16_t h;
                memcpy(&f, v.p + 4 * i, 4);
                HS_TRY(half_of(f, &h, err));
                memcpy(p + 2 * i, &h, 2);
            }
        }
    }
    out->p = p;
    out->n = (size_t)dim * es;
    return HS_OK;
}

hs_status pv_from_array(pv_type to, pv_elem e, const double *x, int64_t n, bool has_null,
                        int32_t typmod, hs_arena *ar, pv_val *out, hs_error *err)
{
    if (has_null)
        return perr(err, "array must not contain nulls");
    HS_TRY(check_dim(to, n, err));
    HS_TRY(check_expected(typmod, n, err));
    const char *tn = pv_type_name(to);
    if (to == PV_VECTOR) {
        float *r = alloc8(ar, 4 * (size_t)n);
        if (!r)
            return nomem(err, 4 * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            r[i] = e == PV_E_INT4 ? (float)(int32_t)x[i] : pvk_double_to_float(x[i]);
        for (int64_t i = 0; i < n; i++) {
            if (isnan(r[i]))
                return perr(err, "NaN not allowed in %s", tn);
            if (isinf(r[i]))
                return perr(err, "infinite value not allowed in %s", tn);
        }
        out->p = (const uint8_t *)r;
        out->n = 4 * (size_t)n;
        return HS_OK;
    }
    if (to == PV_HALFVEC) {
        uint16_t *r = alloc8(ar, 2 * (size_t)n);
        if (!r)
            return nomem(err, 2 * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            HS_TRY(half_of(e == PV_E_INT4 ? (float)(int32_t)x[i] : pvk_double_to_float(x[i]), &r[i], err));
        for (int64_t i = 0; i < n; i++) {
            if (pvk_half_is_nan(r[i]))
                return perr(err, "NaN not allowed in %s", tn);
            if (pvk_half_is_inf(r[i]))
                return perr(err, "infinite value not allowed in %s", tn);
        }
        out->p = (const uint8_t *)r;
        out->n = 2 * (size_t)n;
        return HS_OK;
    }
    /* sparsevec: non-zero float4 values (NaN counts as non-zero) */
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++) {
        float f = e == PV_E_INT4 ? (float)(int32_t)x[i] : pvk_double_to_float(x[i]);
        nnz += f != 0;
    }
    if (nnz > INT32_MAX / 8)
        return perr(err, "sparsevec cannot have more than %d non-zero elements", PV_SPARSEVEC_MAX_NNZ);
    int32_t *idx;
    float *val;
    uint8_t *p = sparse_new(ar, (int32_t)n, (int32_t)nnz, &idx, &val);
    if (!p)
        return nomem(err, sparse_size(nnz));
    int64_t j = 0;
    for (int64_t i = 0; i < n; i++) {
        float f = e == PV_E_INT4 ? (float)(int32_t)x[i] : pvk_double_to_float(x[i]);
        if (f != 0) {
            idx[j] = (int32_t)i;
            val[j] = f;
            j++;
        }
    }
    for (int64_t i = 0; i < nnz; i++) {
        if (isnan(val[i]))
            return perr(err, "NaN not allowed in sparsevec");
        if (isinf(val[i]))
            return perr(err, "infinite value not allowed in sparsevec");
    }
    out->p = p;
    out->n = sparse_size(nnz);
    return HS_OK;
}

void pv_to_float4(pv_type t, pv_val v, float *x)
{
    if (t == PV_VECTOR) {
        memcpy(x, v.p, v.n);
        return;
    }
    for (size_t i = 0; i < v.n / 2; i++) {
        uint16_t h;
        memcpy(&h, v.p + 2 * i, 2);
        x[i] = pvk_half_to_float(h);
    }
}

/* ------------------------------------------------------------------ */
/* aggregates                                                          */

void pv_agg_init(pv_agg *s, pv_type t, bool is_avg)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    s->is_avg = is_avg;
}

void pv_agg_free(pv_agg *s)
{
    if (!s)
        return;
    hs_free(s->sum);
    hs_free(s->val);
    s->sum = NULL;
    s->val = NULL;
}

hs_status pv_agg_add(pv_agg *s, pv_val v, hs_error *err)
{
    int32_t dim = (int32_t)pv_dims(s->t, v);
    if (s->is_avg) {
        if (s->dim == 0) {
            s->sum = hs_calloc((size_t)dim, sizeof(double));
            if (!s->sum)
                return nomem(err, (size_t)dim * 8);
            s->dim = dim;
            for (int32_t i = 0; i < dim; i++) {
                if (s->t == PV_VECTOR) {
                    float f;
                    memcpy(&f, v.p + 4 * (size_t)i, 4);
                    s->sum[i] = f;
                } else {
                    uint16_t h;
                    memcpy(&h, v.p + 2 * (size_t)i, 2);
                    s->sum[i] = pvk_half_to_float(h);
                }
            }
            s->n += 1.0;
            return HS_OK;
        }
        HS_TRY(check_expected(s->dim, dim, err));
        int rc = s->t == PV_VECTOR ? pvk_vec_accum(dim, s->sum, (const float *)v.p)
                                   : pvk_half_accum(dim, s->sum, (const uint16_t *)v.p);
        if (rc)
            return overflow_err(err, 1);
        s->n += 1.0;
        return HS_OK;
    }
    if (s->dim == 0) {
        s->val = hs_malloc(v.n ? v.n : 1);
        if (!s->val)
            return nomem(err, v.n);
        memcpy(s->val, v.p, v.n);
        s->val_n = v.n;
        s->dim = dim;
        return HS_OK;
    }
    pv_val cur = {s->val, s->val_n};
    HS_TRY(check_dims(s->t, cur, v, err));
    int rc = s->t == PV_VECTOR
                 ? pvk_vec_arith('+', dim, (const float *)s->val, (const float *)v.p, (float *)s->val)
                 : pvk_half_arith('+', dim, (const uint16_t *)s->val, (const uint16_t *)v.p,
                                  (uint16_t *)s->val);
    return rc ? overflow_err(err, rc) : HS_OK;
}

hs_status pv_agg_combine(pv_agg *dst, const pv_agg *src, hs_error *err)
{
    if (src->dim == 0)
        return HS_OK;
    if (dst->dim == 0) {
        if (src->is_avg) {
            dst->sum = hs_malloc((size_t)src->dim * sizeof(double));
            if (!dst->sum)
                return nomem(err, (size_t)src->dim * 8);
            memcpy(dst->sum, src->sum, (size_t)src->dim * sizeof(double));
        } else {
            dst->val = hs_malloc(src->val_n);
            if (!dst->val)
                return nomem(err, src->val_n);
            memcpy(dst->val, src->val, src->val_n);
            dst->val_n = src->val_n;
        }
        dst->dim = src->dim;
        dst->n = src->n;
        return HS_OK;
    }
    if (dst->is_avg) {
        HS_TRY(check_expected(dst->dim, src->dim, err));
        if (pvk_state_combine(dst->dim, dst->sum, src->sum))
            return overflow_err(err, 1);
        dst->n += src->n;
        return HS_OK;
    }
    pv_val v = {src->val, src->val_n};
    return pv_agg_add(dst, v, err);
}

hs_status pv_agg_final(const pv_agg *s, hs_arena *ar, pv_val *out, bool *is_null, hs_error *err)
{
    *is_null = s->dim == 0;
    if (*is_null)
        return HS_OK;
    if (!s->is_avg) {
        uint8_t *p = alloc8(ar, s->val_n);
        if (!p)
            return nomem(err, s->val_n);
        memcpy(p, s->val, s->val_n);
        out->p = p;
        out->n = s->val_n;
        return HS_OK;
    }
    HS_TRY(check_dim(s->t, s->dim, err));
    size_t es = s->t == PV_VECTOR ? 4 : 2;
    uint8_t *p = alloc8(ar, (size_t)s->dim * es);
    if (!p)
        return nomem(err, (size_t)s->dim * es);
    int rc;
    float bad = 0;
    if (s->t == PV_VECTOR)
        rc = pvk_vec_avg(s->dim, s->sum, s->n, (float *)p);
    else
        rc = pvk_half_avg(s->dim, s->sum, s->n, (uint16_t *)p, &bad);
    if (rc == 2) {
        char num[40];
        pv_fmt_float4(bad, num);
        return perr(err, "\"%s\" is out of range for type halfvec", num);
    }
    if (rc)
        return perr(err, "infinite value not allowed in %s", pv_type_name(s->t));
    out->p = p;
    out->n = (size_t)s->dim * es;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* arrays                                                              */

size_t pv_arr_size(int64_t n) { return 8 + 31 * (size_t)n; }

typedef __int128 i128;

typedef struct arr_view {
    int32_t n, flags;
    double *d;
    float *f;
    uint8_t *nul;
    uint8_t *sc;    /* numeric: display scale + 1 (0: unknown, printed as a float8) */
    uint8_t *tag;   /* PV_X_*: whether x holds the element exactly */
    uint8_t *x;     /* i128 x[n], unaligned (memcpy) */
} arr_view;

/* tag values: the element's exact value in x */
enum { X_NONE = 0, X_INT = 1, X_NUM = 2 };   /* none (floats), an integer, numeric at scale sc - 1 */

static arr_view arr_of(pv_val v)
{
    arr_view a;
    int32_t h[2];
    memcpy(h, v.p, 8);
    a.n = h[0];
    a.flags = h[1];
    a.d = (double *)(v.p + 8);
    a.f = (float *)(v.p + 8 + 8 * (size_t)a.n);
    a.nul = (uint8_t *)(v.p + 8 + 12 * (size_t)a.n);
    a.sc = (uint8_t *)(v.p + 8 + 13 * (size_t)a.n);
    a.tag = (uint8_t *)(v.p + 8 + 14 * (size_t)a.n);
    a.x = (uint8_t *)(v.p + 8 + 15 * (size_t)a.n);
    return a;
}

static i128 x_get(arr_view a, int64_t i)
{
    i128 v;
    memcpy(&v, a.x + 16 * (size_t)i, 16);
    return v;
}

static void x_put(arr_view a, int64_t i, i128 v)
{
    memcpy(a.x + 16 * (size_t)i, &v, 16);
}

/* element i an integer v of kind e (int4: v within int32) */
static void set_int(arr_view a, int64_t i, pv_elem e, long long v)
{
    a.d[i] = (double)v;
    a.f[i] = e == PV_E_INT4 ? (float)(int32_t)v : (float)v;
    a.tag[i] = X_INT;
    x_put(a, i, v);
}

#define X_MAX_DIGITS 38
static const i128 I128_MAX = (i128)(((unsigned __int128)1 << 127) - 1);

/* numeric_in of s[0..n) exactly: v at scale *scale (the display scale),
 * false for NaN / Infinity, more than 38 digits or a scale past 38. */
static bool num_exact(const char *s, size_t n, i128 *out, int *scale)
{
    size_t i = 0;
    while (i < n && pg_isspace(s[i]))
        i++;
    bool neg = i < n && s[i] == '-';
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    i128 v = 0;
    int digits = 0, frac = 0;
    bool point = false, any = false;
    for (; i < n && s[i] != 'e' && s[i] != 'E' && !pg_isspace(s[i]); i++) {
        if (s[i] == '.' && !point) {
            point = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            return false;
        any = true;
        if (v == 0 && s[i] == '0') {   /* leading zeros cost no digits */
            frac += point;
            continue;
        }
        if (++digits > X_MAX_DIGITS)
            return false;
        v = v * 10 + (s[i] - '0');
        frac += point;
    }
    if (!any)
        return false;
    long ex = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        char *end;
        char tmp[32];
        size_t k = n - i - 1 < sizeof tmp - 1 ? n - i - 1 : sizeof tmp - 1;
        memcpy(tmp, s + i + 1, k);
        tmp[k] = '\0';
        ex = strtol(tmp, &end, 10);
        if (end == tmp || ex > 1000 || ex < -1000)
            return false;
        i += 1 + (size_t)(end - tmp);
    }
    while (i < n && pg_isspace(s[i]))
        i++;
    if (i != n)
        return false;
    long sc = frac - ex;
    for (; sc < 0; sc++) {   /* 1.5e3: 1500 at scale 0 */
        if (++digits > X_MAX_DIGITS)
            return false;
        v *= 10;
    }
    if (sc > X_MAX_DIGITS)
        return false;
    *out = neg ? -v : v;
    *scale = (int)sc;
    return true;
}

/* v at scale (0..38) as numeric_out prints it into out (48 bytes). */
static int num_text(i128 v, int scale, char *out)
{
    char dig[48];
    int nd = 0;
    unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        dig[nd++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (nd <= scale)   /* at least one digit before the point */
        dig[nd++] = '0';
    int k = 0;
    if (v < 0)
        out[k++] = '-';
    for (int i = nd - 1; i >= 0; i--) {
        out[k++] = dig[i];
        if (i == scale && scale > 0)
            out[k++] = '.';
    }
    out[k] = '\0';
    return k;
}

/* The order of exact values x (at scale sx) and y (at sy). */
static int exact_cmp(i128 x, int sx, i128 y, int sy)
{
    if ((x < 0) != (y < 0))
        return x < 0 ? -1 : 1;
    while (sx < sy) {   /* bring x to y's scale; past the range x is the larger magnitude */
        if (x > I128_MAX / 10 || x < -(I128_MAX / 10))
            return x < 0 ? -1 : 1;
        x *= 10;
        sx++;
    }
    while (sy < sx) {
        if (y > I128_MAX / 10 || y < -(I128_MAX / 10))
            return y < 0 ? 1 : -1;
        y *= 10;
        sy++;
    }
    return x < y ? -1 : x > y;
}

/* numeric -> integer: x at scale sc rounded half away from zero */
static i128 num_round(i128 x, int sc)
{
    if (sc == 0)
        return x;
    i128 p = 1;
    for (int i = 0; i < sc; i++)
        p *= 10;
    i128 q = x / p, r = x % p;
    if (r < 0 ? -r * 2 >= p : r * 2 >= p)
        q += x < 0 ? -1 : 1;
    return q;
}

/* numeric_in's display scale of the numeric text s[0..n) (digits after the
 * point less the exponent), +1; 0 for NaN / Infinity or past 253. */
static uint8_t num_scale(const char *s, size_t n)
{
    size_t i = 0;
    long frac = 0, ex = 0;
    bool point = false, digit = false;
    for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] == '.') {
            point = true;
        } else if (s[i] >= '0' && s[i] <= '9') {
            digit = true;
            frac += point;
        }
    }
    if (!digit)
        return 0;
    if (i < n)
        ex = strtol(s + i + 1, NULL, 10);
    long sc = frac - ex < 0 ? 0 : frac - ex;
    return sc > 253 ? 0 : (uint8_t)(sc + 1);
}

hs_status pv_arr_new(hs_arena *ar, int64_t n, pv_val *out, double **d, float **f, uint8_t **nul,
                     hs_error *err)
{
    if (n > INT32_MAX / 16)
        return perr(err, "array size exceeds the maximum allowed (%d)", INT32_MAX / 16);
    size_t sz = pv_arr_size(n);
    uint8_t *p = hs_arena_calloc(ar, 1, sz);
    if (!p)
        return nomem(err, sz);
    int32_t h[2] = {(int32_t)n, 0};
    memcpy(p, h, 8);
    out->p = p;
    out->n = sz;
    arr_view a = arr_of(*out);
    if (d)
        *d = a.d;
    if (f)
        *f = a.f;
    if (nul)
        *nul = a.nul;
    return HS_OK;
}

/* v with the dimensions trailer of a multidimensional array (flags
 * PV_ARR_MULTIDIM): a copy in ar one int32 ndim and ndim int32 sizes
 * longer. */
static hs_status with_dims(hs_arena *ar, pv_val v, int ndim, const int32_t *dims, pv_val *out, hs_error *err)
{
    size_t base = pv_arr_size(arr_of(v).n), sz = base + 4 + 4 * (size_t)ndim;
    uint8_t *p = hs_arena_alloc(ar, sz);
    if (!p)
        return nomem(err, sz);
    memcpy(p, v.p, base);
    int32_t nd = ndim, flags;
    memcpy(p + base, &nd, 4);
    memcpy(p + base + 4, dims, 4 * (size_t)ndim);
    memcpy(&flags, p + 4, 4);
    flags |= PV_ARR_MULTIDIM;
    memcpy(p + 4, &flags, 4);
    out->p = p;
    out->n = sz;
    return HS_OK;
}

int pv_arr_dims(pv_val v, int32_t *dims)
{
    arr_view a = arr_of(v);
    if (a.n == 0)
        return 0;
    size_t base = pv_arr_size(a.n);
    int32_t nd = 0;
    if ((a.flags & PV_ARR_MULTIDIM) && v.n >= base + 4)
        memcpy(&nd, v.p + base, 4);
    if (nd < 2 || nd > PV_ARR_MAXDIM || v.n < base + 4 + 4 * (size_t)nd) {
        dims[0] = a.n;
        return 1;
    }
    memcpy(dims, v.p + base + 4, 4 * (size_t)nd);
    return nd;
}

static const char *elem_name(pv_elem e)
{
    switch (e) {
    case PV_E_INT4: return "integer";
    case PV_E_FLOAT4: return "real";
    case PV_E_FLOAT8: return "double precision";
    case PV_E_NUMERIC: return "numeric";
    case PV_E_TEXT: return "text";   /* not a pv_arr kind (expr/textarr.h) */
    case PV_E_INT8: return "bigint";
    }
    return "?";
}

/* PostgreSQL's float4in / float8in: strtod with NaN / Infinity spellings,
 * range errors for overflow and (float8) underflow to zero. */
static hs_status float_text(pv_elem e, const char *s, double *d, float *f, uint8_t *sc, hs_error *err)
{
    const char *p = s;
    while (pg_isspace(*p))
        p++;
    char *end;
    errno = 0;
    if (e == PV_E_FLOAT4) {
        float v = hs_strtof(p, &end);
        if (end == p)
            return perr(err, "invalid input syntax for type real: \"%.*s\"", LIT_MAX, s);
        if (errno == ERANGE && (isinf(v) || v == 0))
            return perr(err, "\"%.*s\" is out of range for type real", LIT_MAX, s);
        while (pg_isspace(*end))
            end++;
        if (*end)
            return perr(err, "invalid input syntax for type real: \"%.*s\"", LIT_MAX, s);
        *f = v;
        *d = v;
        return HS_OK;
    }
    double v = hs_strtod(p, &end);
    if (end == p)
        return perr(err, "invalid input syntax for type %s: \"%.*s\"", elem_name(e), LIT_MAX, s);
    if (e == PV_E_FLOAT8 && errno == ERANGE && (isinf(v) || v == 0))
        return perr(err, "\"%.*s\" is out of range for type double precision", LIT_MAX, s);
    const char *tok_end = end;   /* the number, without trailing whitespace */
    while (pg_isspace(*end))
        end++;
    if (*end)
        return perr(err, "invalid input syntax for type %s: \"%.*s\"", elem_name(e), LIT_MAX, s);
    *d = v;
    if (e == PV_E_NUMERIC) {
        /* numeric syntax: digits, '.', exponent, NaN, Infinity (no hex, no "inf") */
        const char *t = p + (*p == '+' || *p == '-');
        size_t tl = (size_t)(tok_end - t);
        bool special = (tl == 8 && !strncasecmp(t, "infinity", 8)) || (tl == 3 && !strncasecmp(t, "nan", 3)) ||
                       (tl == 3 && !strncasecmp(t, "inf", 3));
        for (const char *q = t; q < tok_end && !special; q++)
            if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-'))
                return perr(err, "invalid input syntax for type numeric: \"%.*s\"", LIT_MAX, s);
        char tmp[400];
        size_t len = (size_t)(tok_end - p) < sizeof tmp - 1 ? (size_t)(tok_end - p) : sizeof tmp - 1;
        memcpy(tmp, p, len);
        tmp[len] = '\0';
        *f = hs_strtof(tmp, NULL); /* numeric_float4: float4in of the numeric's text */
        if (sc)
            *sc = special ? 0 : num_scale(tmp, len);
        return HS_OK;
    }
    *f = (float)v;
    return HS_OK;
}

/* int4in / int8in of the NUL-terminated s (surrounding whitespace allowed):
 * "invalid input syntax for type integer|bigint", "value ... is out of
 * range for type ...". */
static hs_status int_text(pv_elem e, const char *s, long long *out, hs_error *err)
{
    const char *p = s, *name = e == PV_E_INT8 ? "bigint" : "integer";
    while (pg_isspace(*p))
        p++;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    const char *q = end;
    while (pg_isspace(*q))
        q++;
    if (end == p || *q)
        return perr(err, "invalid input syntax for type %s: \"%s\"", name, s);
    if (errno == ERANGE || (e == PV_E_INT4 && (v > INT32_MAX || v < INT32_MIN)))
        return perr(err, "value \"%s\" is out of range for type %s", s, name);
    *out = v;
    return HS_OK;
}

hs_status pv_arr_set_text(pv_elem e, pv_val arr, int64_t i, const char *s, size_t n, hs_error *err)
{
    arr_view a = arr_of(arr);
    char buf[512];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (e == PV_E_INT8 || e == PV_E_INT4) {
        long long v = 0;
        HS_TRY(int_text(e, buf, &v, err));
        set_int(a, i, e, v);
        return HS_OK;
    }
    HS_TRY(float_text(e, buf, &a.d[i], &a.f[i], &a.sc[i], err));
    i128 x;
    int sc;
    if (e == PV_E_NUMERIC && a.sc[i] && num_exact(buf, n, &x, &sc) && sc == a.sc[i] - 1) {
        a.tag[i] = X_NUM;
        x_put(a, i, x);
    }
    return HS_OK;
}

/* array_in for one-dimensional arrays of numbers (and the multidimensional
 * shape, flagged: the casts then say "array must be 1-D"). */
hs_status pv_arr_in(pv_elem e, const char *s0, size_t n0, hs_arena *ar, pv_val *out, hs_error *err)
{
    const char *nulb = memchr(s0, '\0', n0);
    size_t n = nulb ? (size_t)(nulb - s0) : n0;
    char *s = hs_arena_strndup(ar, s0, n);
    if (!s)
        return nomem(err, n);
    const char *p = s;
    while (pg_isspace(*p))
        p++;
    if (*p != '{')
        return perr(err, "malformed array literal: \"%.*s\"", LIT_MAX, s);
    /* count the elements and the nesting: every brace of one depth holds
     * the same number of items, elements only at the deepest (PostgreSQL's
     * rectangular arrays) */
    int depth = 0, max_depth = 0, elem_depth = -1;
    int32_t items[PV_ARR_MAXDIM + 2] = {0}, dims[PV_ARR_MAXDIM + 2];
    for (int k = 0; k < PV_ARR_MAXDIM + 2; k++)
        dims[k] = -1;
    int64_t count = 0;
    bool in_q = false, any = false, ragged = false;
    for (const char *q = p; *q; q++) {
        if (in_q) {
            if (*q == '\\' && q[1])
                q++;
            else if (*q == '"')
                in_q = false;
            continue;
        }
        bool ends = (*q == '}' || *q == ',') && any;
        if (ends) {   /* an element at this depth */
            count++;
            items[depth]++;
            ragged |= elem_depth >= 0 && elem_depth != depth;
            elem_depth = depth;
        }
        if (*q == '"') {
            in_q = true;
            any = true;
        } else if (*q == '{') {
            if (depth >= PV_ARR_MAXDIM)
                return perr(err, "number of array dimensions (%d) exceeds the maximum allowed (%d)", depth + 1,
                            PV_ARR_MAXDIM);
            ragged |= any;
            items[depth]++;
            depth++;
            items[depth] = 0;
            if (depth > max_depth)
                max_depth = depth;
        } else if (*q == '}') {
            any = false;
            if (depth >= 1) {
                ragged |= dims[depth] >= 0 && dims[depth] != items[depth];
                dims[depth] = items[depth];
            }
            depth--;
        } else if (*q == ',') {
            any = false;
        } else if (!pg_isspace(*q)) {
            any = true;
        }
    }
    if (in_q || depth != 0 || (count > 0 && (ragged || elem_depth != max_depth)) || (count == 0 && max_depth > 1))
        return perr(err, "malformed array literal: \"%.*s\"", LIT_MAX, s);
    pv_val v;
    double *d;
    float *f;
    uint8_t *nul;
    HS_TRY(pv_arr_new(ar, count, &v, &d, &f, &nul, err));
    int32_t flags = 0;
    /* parse the elements */
    int64_t i = 0;
    depth = 0;
    const char *q = p;
    bool expect_elem = true;
    while (*q) {
        if (*q == '{') {
            depth++;
            q++;
            expect_elem = true;
            continue;
        }
        if (*q == '}') {
            depth--;
            q++;
            const char *r = q;
            while (pg_isspace(*r))
                r++;
            if (depth == 0 && *r)
                return perr(err, "malformed array literal: \"%.*s\"", LIT_MAX, s);
            continue;
        }
        if (*q == ',' || pg_isspace(*q)) {
            q++;
            continue;
        }
        if (!expect_elem && 0)
            break;
        /* an element: quoted or up to , or } */
        char ebuf[512];
        size_t el = 0;
        bool quoted = false;
        if (*q == '"') {
            quoted = true;
            q++;
            while (*q && *q != '"') {
                if (*q == '\\' && q[1])
                    q++;
                if (el < sizeof ebuf - 1)
                    ebuf[el++] = *q;
                q++;
            }
            if (*q == '"')
                q++;
        } else {
            while (*q && *q != ',' && *q != '}' && *q != '{') {
                if (el < sizeof ebuf - 1)
                    ebuf[el++] = *q;
                q++;
            }
            while (el > 0 && pg_isspace(ebuf[el - 1]))
                el--;
        }
        ebuf[el] = '\0';
        if (i >= count)
            return perr(err, "malformed array literal: \"%.*s\"", LIT_MAX, s);
        if (!quoted && strcasecmp(ebuf, "NULL") == 0) {
            nul[i] = 1;
            flags |= PV_ARR_HAS_NULL;
        } else {
            HS_TRY(pv_arr_set_text(e, v, i, ebuf, el, err));
        }
        i++;
    }
    int32_t h[2] = {(int32_t)count, flags};
    memcpy((uint8_t *)v.p, h, 8);
    if (count > 0 && max_depth > 1)   /* dims[1..max_depth]: the sizes, outermost first */
        return with_dims(ar, v, max_depth, dims + 1, out, err);
    *out = v;
    return HS_OK;
}

int pv_arr_elem_text(pv_elem e, pv_val v, int64_t i, char *num)
{
    arr_view a = arr_of(v);
    if (a.nul[i])
        return sprintf(num, "NULL");
    if ((e == PV_E_INT4 || e == PV_E_INT8) && a.tag[i] == X_INT)
        return sprintf(num, "%lld", (long long)x_get(a, i));
    if (e == PV_E_INT4)
        return sprintf(num, "%d", (int32_t)a.d[i]);
    if (e == PV_E_INT8)
        return sprintf(num, "%lld", (long long)a.d[i]);
    if (e == PV_E_FLOAT4)
        return pv_fmt_float4(a.f[i], num);
    if (e == PV_E_NUMERIC && a.tag[i] == X_NUM)   /* numeric_out, exact */
        return num_text(x_get(a, i), a.sc[i] - 1, num);
    if (e == PV_E_NUMERIC && a.sc[i] && a.sc[i] <= 16 && fabs(a.d[i]) < 1e15)
        /* numeric_out at its display scale (the double holds <= 15 digits) */
        return hs_snprintf_c(num, 48, "%.*f", a.sc[i] - 1, a.d[i] == 0 ? 0.0 : a.d[i]);
    return pv_fmt_float8(a.d[i], num);
}

hs_status pv_arr_out(pv_elem e, pv_val v, hs_buf *out)
{
    arr_view a = arr_of(v);
    char num[48];
    int32_t dims[PV_ARR_MAXDIM];
    int nd = pv_arr_dims(v, dims);
    int64_t stride[PV_ARR_MAXDIM];   /* elements per item of each depth */
    for (int l = nd - 1; l >= 0; l--)
        stride[l] = l == nd - 1 ? 1 : stride[l + 1] * dims[l + 1];
    for (int l = 0; l < (nd ? nd : 1); l++)
        HS_TRY(hs_buf_append_byte(out, '{'));
    for (int32_t i = 0; i < a.n; i++) {
        int closes = 0;   /* the sub-arrays that end before element i */
        for (int l = 0; i && l < nd - 1; l++)
            closes += i % stride[l] == 0;
        for (int l = 0; l < closes; l++)
            HS_TRY(hs_buf_append_byte(out, '}'));
        if (i)
            HS_TRY(hs_buf_append_byte(out, ','));
        for (int l = 0; l < closes; l++)
            HS_TRY(hs_buf_append_byte(out, '{'));
        int k = pv_arr_elem_text(e, v, i, num);
        HS_TRY(hs_buf_append(out, num, (size_t)k));
    }
    for (int l = 0; l < (nd ? nd : 1); l++)
        HS_TRY(hs_buf_append_byte(out, '}'));
    return HS_OK;
}

bool pv_arr_multidim(pv_val v)
{
    int32_t flags;
    if (v.n < 8)
        return false;
    memcpy(&flags, v.p + 4, 4);
    return (flags & PV_ARR_MULTIDIM) != 0;
}

int64_t pv_arr_len(pv_val v)
{
    int32_t n;
    if (v.n < 8)
        return 0;
    memcpy(&n, v.p, 4);
    return n;
}

bool pv_arr_get(pv_val v, int64_t i, double *x)
{
    arr_view a = arr_of(v);
    if (a.nul[i])
        return false;
    *x = a.d[i];
    return true;
}

/* float8's btree order (NaN equal to NaN and after every number), which
 * numeric's and the integers' agree with on these values */
static int num_cmp(double x, double y)
{
    bool nx = isnan(x), ny = isnan(y);
    if (nx || ny)
        return nx - ny;
    return x < y ? -1 : x > y;
}

/* exact when both elements are (integers at scale 0, numerics at theirs) */
static int elem_cmp(arr_view x, int64_t i, arr_view y, int64_t j)
{
    if (x.tag[i] && y.tag[j])
        return exact_cmp(x_get(x, i), x.tag[i] == X_NUM ? x.sc[i] - 1 : 0, x_get(y, j),
                         y.tag[j] == X_NUM ? y.sc[j] - 1 : 0);
    return num_cmp(x.d[i], y.d[j]);
}

int pv_arr_elem_cmp(pv_val a, int64_t i, pv_val b, int64_t j)
{
    return elem_cmp(arr_of(a), i, arr_of(b), j);
}

bool pv_arr_get_exact(pv_val v, int64_t i, __int128 *x, int *scale)
{
    arr_view a = arr_of(v);
    if (a.nul[i] || !a.tag[i])
        return false;
    *x = x_get(a, i);
    *scale = a.tag[i] == X_NUM ? a.sc[i] - 1 : 0;
    return true;
}

void pv_arr_set_int(pv_elem e, pv_val arr, int64_t i, int64_t v)
{
    set_int(arr_of(arr), i, e, v);
}

int pv_arr_cmp(pv_val a, pv_val b)
{
    arr_view x = arr_of(a), y = arr_of(b);
    int32_t n = x.n < y.n ? x.n : y.n;
    for (int32_t i = 0; i < n; i++) {
        if (x.nul[i] || y.nul[i]) {
            if (x.nul[i] != y.nul[i])
                return x.nul[i] ? 1 : -1;
            continue;
        }
        int c = elem_cmp(x, i, y, i);
        if (c)
            return c;
    }
    /* the same elements up to the shorter: fewer dimensions first, then
     * the smaller sizes (one dimension: the shorter array) */
    int32_t da[PV_ARR_MAXDIM], db[PV_ARR_MAXDIM];
    int na = pv_arr_dims(a, da), nb = pv_arr_dims(b, db);
    if (na != nb)
        return na < nb ? -1 : 1;
    for (int l = 0; l < na; l++)
        if (da[l] != db[l])
            return da[l] < db[l] ? -1 : 1;
    return 0;
}

/* element i of non-NULL elements of x equal to one of y */
static bool elem_in(arr_view x, int32_t i, arr_view y)
{
    for (int32_t k = 0; k < y.n; k++)
        if (!y.nul[k] && elem_cmp(x, i, y, k) == 0)
            return true;
    return false;
}

bool pv_arr_contains(pv_val a, pv_val b, bool overlap)
{
    arr_view x = arr_of(a), y = arr_of(b);
    for (int32_t i = 0; i < y.n; i++) {
        if (y.nul[i]) {
            if (!overlap)
                return false;
            continue;
        }
        bool in = elem_in(y, i, x);
        if (overlap && in)
            return true;
        if (!overlap && !in)
            return false;
    }
    return !overlap;
}

hs_status pv_arr_pick(pv_val v, pv_val w, const int64_t *idx, int64_t n, hs_arena *ar, pv_val *out,
                      hs_error *err)
{
    arr_view x = arr_of(v), y = w.p ? arr_of(w) : x;
    pv_val r;
    double *d;
    float *f;
    uint8_t *nul;
    HS_TRY(pv_arr_new(ar, n, &r, &d, &f, &nul, err));
    arr_view z = arr_of(r);
    int32_t flags = 0;
    for (int64_t k = 0; k < n; k++) {
        arr_view s = idx[k] >= 0 ? x : y;
        int64_t i = idx[k] >= 0 ? idx[k] : -1 - idx[k];
        d[k] = s.d[i];
        f[k] = s.f[i];
        nul[k] = s.nul[i];
        z.sc[k] = s.sc[i];
        z.tag[k] = s.tag[i];
        memcpy(z.x + 16 * (size_t)k, s.x + 16 * (size_t)i, 16);
        if (nul[k])
            flags |= PV_ARR_HAS_NULL;
    }
    memcpy((uint8_t *)r.p + 4, &flags, 4);
    *out = r;
    return HS_OK;
}

hs_status pv_arr_cast(pv_elem from, pv_elem to, pv_val v, hs_arena *ar, pv_val *out, hs_error *err)
{
    arr_view a = arr_of(v);
    pv_val r;
    double *d;
    float *f;
    uint8_t *nul;
    HS_TRY(pv_arr_new(ar, a.n, &r, &d, &f, &nul, err));
    memcpy((uint8_t *)r.p + 4, &a.flags, 4);
    arr_view ra = arr_of(r);
    uint8_t *r_sc = ra.sc;
    for (int32_t i = 0; i < a.n; i++) {
        nul[i] = a.nul[i];
        if (a.nul[i])
            continue;
        double x = from == PV_E_FLOAT4 ? (double)a.f[i] : a.d[i];
        bool exact = a.tag[i] != X_NONE;
        i128 xv = exact ? x_get(a, i) : 0;
        switch (to) {
        case PV_E_INT8: case PV_E_INT4: {
            bool i8 = to == PV_E_INT8;
            if (exact) {   /* integers, numerics (rounded half away from zero) */
                i128 q = num_round(xv, a.tag[i] == X_NUM ? a.sc[i] - 1 : 0);
                if (i8 ? q < INT64_MIN || q > INT64_MAX : q < INT32_MIN || q > INT32_MAX)
                    return perr(err, i8 ? "bigint out of range" : "integer out of range");
                set_int(ra, i, to, (long long)q);
                break;
            }
            double lim = i8 ? 9223372036854775808.0 : 2147483648.0;
            if (isnan(x) || rint(x) < -lim || rint(x) >= lim)
                return perr(err, i8 ? "bigint out of range" : "integer out of range");
            double rx = from == PV_E_NUMERIC ? round(x) : rint(x); /* numeric rounds half away */
            set_int(ra, i, to, (long long)rx);
            break;
        }
        case PV_E_FLOAT4:
            if (from == PV_E_FLOAT8 && isinf((float)x) && !isinf(x))
                return perr(err, "value out of range: overflow");
            if (from == PV_E_FLOAT8 && (float)x == 0 && x != 0)
                return perr(err, "value out of range: underflow");
            f[i] = from == PV_E_NUMERIC ? a.f[i] : (float)x;
            d[i] = f[i];
            break;
        case PV_E_FLOAT8:
            d[i] = x;
            f[i] = (float)x;
            break;
        case PV_E_NUMERIC: {
            if (from == PV_E_INT4 || from == PV_E_INT8 || from == PV_E_NUMERIC) {
                d[i] = x;
                f[i] = from == PV_E_NUMERIC ? a.f[i] : (float)x;
                r_sc[i] = from == PV_E_NUMERIC ? a.sc[i] : 1;
                ra.tag[i] = exact ? X_NUM : X_NONE;   /* an integer: numeric at scale 0 */
                x_put(ra, i, xv);
                break;
            }
            /* float -> numeric keeps FLT_DIG / DBL_DIG significant digits */
            char t[64];
            int tl = hs_snprintf_c(t, sizeof t, "%.*g", from == PV_E_FLOAT4 ? 6 : 15, x);
            d[i] = hs_strtod(t, NULL);
            f[i] = hs_strtof(t, NULL);
            r_sc[i] = isfinite(x) && tl > 0 ? num_scale(t, (size_t)tl) : 0;
            int sc;
            if (r_sc[i] && num_exact(t, (size_t)tl, &xv, &sc) && sc == r_sc[i] - 1) {
                ra.tag[i] = X_NUM;
                x_put(ra, i, xv);
            }
            break;
        }
        case PV_E_TEXT:   /* text[] casts are expr_textarr.c's */
            return perr(err, "unsupported array type");
        }
    }
    if (a.flags & PV_ARR_MULTIDIM) {   /* the same shape */
        int32_t dims[PV_ARR_MAXDIM];
        int nd = pv_arr_dims(v, dims);
        if (nd > 1)
            return with_dims(ar, r, nd, dims, out, err);
    }
    *out = r;
    return HS_OK;
}

hs_status pv_arr_cat(pv_val a, pv_val b, hs_arena *ar, pv_val *out, hs_error *err)
{
    arr_view x = arr_of(a), y = arr_of(b);
    if ((x.flags | y.flags) & PV_ARR_MULTIDIM)
        return hs_err_set(err, HS_UNSUPPORTED, "multidimensional arrays are not supported");
    int64_t n = (int64_t)x.n + y.n;
    pv_val r;
    double *d;
    float *f;
    uint8_t *nul;
    HS_TRY(pv_arr_new(ar, n, &r, &d, &f, &nul, err));
    memcpy(d, x.d, 8 * (size_t)x.n);
    memcpy(d + x.n, y.d, 8 * (size_t)y.n);
    memcpy(f, x.f, 4 * (size_t)x.n);
    memcpy(f + x.n, y.f, 4 * (size_t)y.n);
    memcpy(nul, x.nul, (size_t)x.n);
    memcpy(nul + x.n, y.nul, (size_t)y.n);
    arr_view z = arr_of(r);
    memcpy(z.sc, x.sc, (size_t)x.n);
    memcpy(z.sc + x.n, y.sc, (size_t)y.n);
    memcpy(z.tag, x.tag, (size_t)x.n);
    memcpy(z.tag + x.n, y.tag, (size_t)y.n);
    memcpy(z.x, x.x, 16 * (size_t)x.n);
    memcpy(z.x + 16 * (size_t)x.n, y.x, 16 * (size_t)y.n);
    int32_t flags = (x.flags | y.flags) & PV_ARR_HAS_NULL;
    memcpy((uint8_t *)r.p + 4, &flags, 4);
    *out = r;
    return HS_OK;
}

hs_status pv_arr_to(pv_type to, pv_elem e, pv_val arr, int32_t typmod, hs_arena *ar, pv_val *out,
                    hs_error *err)
{
    arr_view a = arr_of(arr);
    if (e == PV_E_INT8 || e == PV_E_TEXT)   /* no such casts (the binder refuses them) */
        return perr(err, "unsupported array type");
    if (a.flags & PV_ARR_MULTIDIM)
        return perr(err, "array must be 1-D");
    double *x = hs_arena_alloc(ar, 8 * (size_t)(a.n ? a.n : 1));
    if (!x)
        return nomem(err, 8 * (size_t)a.n);
    for (int32_t i = 0; i < a.n; i++)
        x[i] = e == PV_E_FLOAT8 || e == PV_E_INT4 ? a.d[i] : (double)a.f[i];
    return pv_from_array(to, e == PV_E_NUMERIC ? PV_E_FLOAT4 : e, x, a.n, (a.flags & PV_ARR_HAS_NULL) != 0,
                         typmod, ar, out, err);
}

hs_status pv_to_arr(pv_type from, pv_val v, hs_arena *ar, pv_val *out, hs_error *err)
{
    int64_t n = pv_dims(from, v);
    double *d;
    float *f;
    HS_TRY(pv_arr_new(ar, n, out, &d, &f, NULL, err));
    pv_to_float4(from, v, f);
    for (int64_t i = 0; i < n; i++)
        d[i] = f[i];
    return HS_OK;
}
