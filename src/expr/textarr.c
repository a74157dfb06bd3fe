/*
 * expr/textarr.c - text[] values (the blob layout is textarr.h's): building,
 * PostgreSQL's array_in / array_out for text, array_cmp, @> and &&.
 * Pure functions of blobs: binding and evaluation are expr_textarr.c's.
 */
#include "expr/textarr.h"

#include "base/mem.h"

#include <string.h>
#include <strings.h>

static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

int64_t ta_len(pv_val v)
{
    if (v.n < 8)
        return 0;
    int32_t n = rd32(v.p);
    return n < 0 ? 0 : n;
}

bool ta_has_null(pv_val v)
{
    return v.n >= 8 && (rd32(v.p + 4) & PV_ARR_HAS_NULL);
}

bool ta_valid(pv_val v)
{
    if (v.n < 8)
        return false;
    int64_t n = rd32(v.p);
    if (n < 0 || n > TA_MAX_ELEMS || v.n < 8 + 5 * (size_t)n)
        return false;
    size_t room = v.n - 8 - 5 * (size_t)n;
    uint32_t prev = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t e = (uint32_t)rd32(v.p + 8 + 4 * i);
        if (e < prev || e > room)
            return false;
        prev = e;
    }
    return prev == room;
}

bool ta_get(pv_val v, int64_t i, const uint8_t **p, size_t *n)
{
    int64_t len = ta_len(v);
    const uint8_t *ends = v.p + 8, *nul = v.p + 8 + 4 * len, *bytes = nul + len;
    if (nul[i]) {
        *p = (const uint8_t *)"";
        *n = 0;
        return false;
    }
    uint32_t start = i ? (uint32_t)rd32(ends + 4 * (i - 1)) : 0, end = (uint32_t)rd32(ends + 4 * i);
    *p = bytes + start;
    *n = end - start;
    return true;
}

/* ---- building ---- */

hs_status ta_b_add(ta_builder *b, const void *p, size_t n, bool is_null)
{
    if (b->n >= TA_MAX_ELEMS || b->bytes.len + n > UINT32_MAX)
        return HS_INVALID;
    if (is_null)
        n = 0;
    if (n)
        HS_TRY(hs_buf_append(&b->bytes, p, n));
    uint32_t end = (uint32_t)b->bytes.len;
    HS_TRY(hs_buf_append(&b->ends, &end, 4));
    HS_TRY(hs_buf_append_byte(&b->nul, is_null));
    b->has_null |= is_null;
    b->n++;
    return HS_OK;
}

hs_status ta_b_add_range(ta_builder *b, pv_val v, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        const uint8_t *p;
        size_t n;
        bool ok = ta_get(v, i, &p, &n);
        HS_TRY(ta_b_add(b, p, n, !ok));
    }
    return HS_OK;
}

void ta_b_free(ta_builder *b)
{
    hs_buf_free(&b->ends);
    hs_buf_free(&b->nul);
    hs_buf_free(&b->bytes);
    b->n = 0;
    b->has_null = false;
}

hs_status ta_b_done(ta_builder *b, hs_arena *ar, pv_val *out)
{
    size_t sz = 8 + b->ends.len + b->nul.len + b->bytes.len;
    uint8_t *p = hs_arena_alloc(ar, sz);
    if (!p) {
        ta_b_free(b);
        return HS_NOMEM;
    }
    int32_t h[2] = {(int32_t)b->n, b->has_null ? PV_ARR_HAS_NULL : 0};
    memcpy(p, h, 8);
    if (b->ends.len)
        memcpy(p + 8, b->ends.data, b->ends.len);
    if (b->nul.len)
        memcpy(p + 8 + b->ends.len, b->nul.data, b->nul.len);
    if (b->bytes.len)
        memcpy(p + 8 + b->ends.len + b->nul.len, b->bytes.data, b->bytes.len);
    out->p = p;
    out->n = sz;
    ta_b_free(b);
    return HS_OK;
}

/* ---- text forms ---- */

static bool arr_space(char c)   /* array_isspace */
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static hs_status malformed(hs_error *err, const char *s, size_t n, const char *detail)
{
    return hs_err_set(err, HS_INVALID, "malformed array literal: \"%.*s\" (%s)",
                      (int)(n > 200 ? 200 : n), s, detail);
}

/* One element at *pp (after leading whitespace) into buf (length *len):
 * quoted or bare, backslash escapes; *is_null for a bare NULL. */
static hs_status read_elem(const char **pp, const char *end, const char *s, size_t n, char *buf,
                           size_t *len, bool *is_null, hs_error *err)
{
    const char *p = *pp;
    size_t k = 0, keep = 0;   /* keep: length up to the last escaped or non-space byte */
    bool quoted = p < end && *p == '"', any_escape = false;
    if (quoted) {
        for (p++;; p++) {
            if (p >= end)
                return malformed(err, s, n, "unexpected end of input");
            if (*p == '"')
                break;
            if (*p == '\\' && ++p >= end)
                return malformed(err, s, n, "unexpected end of input");
            buf[k++] = *p;
        }
        p++;
        keep = k;
        while (p < end && arr_space(*p))
            p++;
    } else {
        for (; p < end && *p != ',' && *p != '}'; p++) {
            if (*p == '"' || *p == '{')
                return malformed(err, s, n, "unexpected character in an element");
            if (*p == '\\') {
                if (++p >= end)
                    return malformed(err, s, n, "unexpected end of input");
                any_escape = true;
                buf[k++] = *p;
                keep = k;
            } else {
                buf[k++] = *p;
                if (!arr_space(*p))
                    keep = k;
            }
        }
        if (keep == 0 && !any_escape)
            return malformed(err, s, n, p < end ? "unexpected \",\" or \"}\" character"
                                               : "unexpected end of input");
    }
    if (p >= end || (*p != ',' && *p != '}'))
        return malformed(err, s, n, p >= end ? "unexpected end of input" : "unexpected array element");
    *is_null = !quoted && !any_escape && keep == 4 && !strncasecmp(buf, "NULL", 4);
    *len = keep;
    *pp = p;
    return HS_OK;
}

hs_status ta_in(const char *s, size_t n, hs_arena *ar, pv_val *out, hs_error *err)
{
    const char *z = memchr(s, 0, n);
    if (z)
        n = (size_t)(z - s);
    const char *p = s, *end = s + n;
    while (p < end && arr_space(*p))
        p++;
    if (p < end && *p == '[')
        return hs_err_set(err, HS_UNSUPPORTED, "array literals with dimension decorations are not "
                          "supported: \"%.*s\"", (int)(n > 64 ? 64 : n), s);
    if (p >= end || *p != '{')
        return malformed(err, s, n, "Array value must start with \"{\" or dimension information.");
    p++;
    char *buf = hs_malloc(n + 1);
    if (!buf)
        return hs_err_nomem(err, n + 1);
    ta_builder b = {0};
    hs_status st = HS_OK;
    while (p < end && arr_space(*p))
        p++;
    bool empty = p < end && *p == '}';
    if (empty)
        p++;
    while (!empty && st == HS_OK) {
        while (p < end && arr_space(*p))
            p++;
        if (p < end && *p == '{') {
            st = hs_err_set(err, HS_UNSUPPORTED, "multidimensional arrays are not supported");
            break;
        }
        size_t len = 0;
        bool is_null = false;
        st = read_elem(&p, end, s, n, buf, &len, &is_null, err);
        if (st != HS_OK)
            break;
        st = ta_b_add(&b, buf, len, is_null);
        if (st == HS_NOMEM)
            st = hs_err_nomem(err, len);
        else if (st != HS_OK)
            st = hs_err_set(err, HS_INVALID, "array size exceeds the maximum allowed (%d)", TA_MAX_ELEMS);
        if (*p++ == '}')
            break;
    }
    hs_free(buf);
    if (st == HS_OK) {
        while (p < end && arr_space(*p))
            p++;
        if (p < end)
            st = malformed(err, s, n, "Junk after closing right brace.");
    }
    if (st != HS_OK) {
        ta_b_free(&b);
        return st;
    }
    st = ta_b_done(&b, ar, out);
    return st == HS_OK ? HS_OK : hs_err_nomem(err, n);
}

static bool needs_quotes(const uint8_t *p, size_t n)
{
    if (n == 0 || (n == 4 && !strncasecmp((const char *)p, "NULL", 4)))
        return true;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '{' || p[i] == '}' || p[i] == ',' || p[i] == '"' || p[i] == '\\' ||
            arr_space((char)p[i]))
            return true;
    return false;
}

hs_status ta_out(pv_val v, hs_buf *out)
{
    int64_t n = ta_len(v);
    HS_TRY(hs_buf_append_byte(out, '{'));
    for (int64_t i = 0; i < n; i++) {
        if (i)
            HS_TRY(hs_buf_append_byte(out, ','));
        const uint8_t *p;
        size_t len;
        if (!ta_get(v, i, &p, &len)) {
            HS_TRY(hs_buf_append(out, "NULL", 4));
            continue;
        }
        if (!needs_quotes(p, len)) {
            HS_TRY(hs_buf_append(out, p, len));
            continue;
        }
        HS_TRY(hs_buf_append_byte(out, '"'));
        for (size_t k = 0; k < len; k++) {
            if (p[k] == '"' || p[k] == '\\')
                HS_TRY(hs_buf_append_byte(out, '\\'));
            HS_TRY(hs_buf_append_byte(out, p[k]));
        }
        HS_TRY(hs_buf_append_byte(out, '"'));
    }
    return hs_buf_append_byte(out, '}');
}

/* ---- operators ---- */

static int cmp_text(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t m = na < nb ? na : nb;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return na < nb ? -1 : na > nb;
}

int ta_cmp(pv_val a, pv_val b)
{
    int64_t na = ta_len(a), nb = ta_len(b);
    for (int64_t i = 0; i < na && i < nb; i++) {
        const uint8_t *pa, *pb;
        size_t la, lb;
        bool va = ta_get(a, i, &pa, &la), vb = ta_get(b, i, &pb, &lb);
        if (!va || !vb) {
            if (va != vb)
                return va ? -1 : 1;   /* NULL after every value */
            continue;
        }
        int c = cmp_text(pa, la, pb, lb);
        if (c)
            return c;
    }
    return na < nb ? -1 : na > nb;
}

bool ta_contains(pv_val a, pv_val b, bool overlap)
{
    int64_t na = ta_len(a), nb = ta_len(b);
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *pb;
        size_t lb;
        bool found = false;
        if (ta_get(b, i, &pb, &lb)) {
            for (int64_t k = 0; k < na && !found; k++) {
                const uint8_t *pa;
                size_t la;
                found = ta_get(a, k, &pa, &la) && la == lb && (lb == 0 || !memcmp(pa, pb, lb));
            }
        }
        if (found && overlap)
            return true;
        if (!found && !overlap)
            return false;
    }
    return !overlap;
}
