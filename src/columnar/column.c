/*
 * columnar/column.c - column vectors and batches in Arrow layout.
 *
 * Buffers (see the layout table in column.h):
 *
 *   buffer     element            bytes in use (len)           notes
 *   --------   ----------------   --------------------------   -------------------------
 *   validity   1 bit per row      (length + 7) / 8             data NULL = all valid
 *   offsets    int32, length + 1  4 * (length + 1)             offsets[0] == 0
 *   values     width bytes/row    width * length               fixed types, FIXED_BINARY
 *              1 bit per row      (length + 7) / 8             BOOL
 *              bytes              offsets[length]              STRING / BINARY
 *
 * Invariants of a column built here or normalised by the Arrow importer
 * ("compact"; hs_col_validate checks them):
 *   - offsets[0] == 0 and offsets are monotone;
 *   - LIST/MAP child length == offsets[length]; null LIST/MAP rows have empty
 *     ranges (Arrow allows elements under them; copies drop those elements);
 *   - STRUCT child length == length; FIXED_LIST child length == width * length;
 *   - null_count == number of clear validity bits in [0, length) (0 when the
 *     bitmap is absent); NA columns have no buffers and null_count == length.
 * Appends write every validity/BOOL bit explicitly (set or clear), and fixed
 * slots of null rows are zeroed, so exported buffers hold no stale bytes.
 *
 * Memory: a buffer is owned by its column iff cap > 0 (hs_malloc_aligned,
 * 64-byte aligned, capacity doubling so appends are amortised O(1)).  A buffer
 * with cap == 0 and data != NULL is borrowed from an imported Arrow array and
 * kept alive by the column's owner reference; growing such a buffer first
 * copies it into an owned one (copy on write), so imported columns can be
 * appended to like any other.  Each column of a tree holds its own reference
 * to the owner; hs_col_free drops it.
 *
 * Copies (take, slice, append_column) are deep and recursive; take's internal
 * form accepts index -1 for "null row", which the Arrow importer uses to decode
 * dictionary arrays.
 */
#include "columnar/column.h"
#include "base/mem.h"

#include <stdatomic.h>
#include <string.h>

#define COL_MAX_DEPTH 100

/* ---- owners ---- */

struct hs_col_owner {
    _Atomic int64_t refs;
    void (*release)(void *ctx);
    void *ctx;
};

hs_col_owner *hs_col_owner_new(void (*release)(void *ctx), void *ctx)
{
    hs_col_owner *o = hs_malloc(sizeof *o);
    if (!o)
        return NULL;
    atomic_init(&o->refs, 1);
    o->release = release;
    o->ctx = ctx;
    return o;
}

void hs_col_owner_ref(hs_col_owner *o)
{
    if (o)
        atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

void hs_col_owner_unref(hs_col_owner *o)
{
    if (!o)
        return;
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
        if (o->release)
            o->release(o->ctx);
        hs_free(o);
    }
}

/* ---- bit helpers ---- */

static inline void bit_put(uint8_t *bits, int64_t i, bool v)
{
    if (v)
        hs_bit_set(bits, i);
    else
        hs_bit_clear(bits, i);
}

/* Sets bits [off, off + n) to v. */
static void bits_fill(uint8_t *bits, int64_t off, int64_t n, bool v)
{
    while (n > 0 && (off & 7)) {
        bit_put(bits, off++, v);
        n--;
    }
    if (n >= 8) {
        memset(bits + (off >> 3), v ? 0xff : 0, (size_t)(n >> 3));
        off += n & ~(int64_t)7;
        n &= 7;
    }
    while (n-- > 0)
        bit_put(bits, off++, v);
}

/* Number of set bits in [off, off + n). */
int64_t hs_bits_count(const uint8_t *bits, int64_t off, int64_t n)
{
    int64_t c = 0;
    while (n > 0 && (off & 7)) {
        c += hs_bit_get(bits, off++);
        n--;
    }
    const uint8_t *p = bits + (off >> 3);
    int64_t nbytes = n >> 3;
    int64_t i = 0;
    for (; i + 8 <= nbytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        c += __builtin_popcountll(w);
    }
    for (; i < nbytes; i++)
        c += __builtin_popcount(p[i]);
    off += nbytes * 8;
    n &= 7;
    while (n-- > 0)
        c += hs_bit_get(bits, off++);
    return c;
}

/* The 8 bits of src starting at bit `bit` (all 8 must lie inside src). */
static inline uint8_t bits_load8(const uint8_t *src, int64_t bit)
{
    int sh = (int)(bit & 7);
    const uint8_t *p = src + (bit >> 3);
    if (sh == 0)
        return p[0];
    return (uint8_t)((p[0] >> sh) | (p[1] << (8 - sh)));
}

/* Copies n bits from src[soff..] to dst[doff..]. */
void hs_bits_copy(uint8_t *dst, int64_t doff, const uint8_t *src, int64_t soff, int64_t n)
{
    while (n > 0 && (doff & 7)) {
        bit_put(dst, doff++, hs_bit_get(src, soff++));
        n--;
    }
    if ((soff & 7) == 0 && n >= 8) {
        memcpy(dst + (doff >> 3), src + (soff >> 3), (size_t)(n >> 3));
        int64_t done = n & ~(int64_t)7;
        doff += done;
        soff += done;
        n &= 7;
    }
    while (n >= 8) {
        dst[doff >> 3] = bits_load8(src, soff);
        doff += 8;
        soff += 8;
        n -= 8;
    }
    while (n-- > 0)
        bit_put(dst, doff++, hs_bit_get(src, soff++));
}

/* ---- buffers ---- */

/* Makes room for `need` bytes, keeping the first len bytes.  A borrowed
 * buffer (cap == 0) is copied into an owned one.  zero: clear new bytes. */
static hs_status buf_grow(hs_colbuf *b, size_t need, bool zero)
{
    if (need <= b->cap)
        return HS_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return HS_NOMEM;
        cap *= 2;
    }
    uint8_t *p = hs_malloc_aligned(cap);
    if (!p)
        return HS_NOMEM;
    size_t keep = b->len < cap ? b->len : cap;
    if (keep && b->data)
        memcpy(p, b->data, keep);
    if (zero)
        memset(p + keep, 0, cap - keep);
    if (b->cap)
        hs_free_aligned(b->data);
    b->data = p;
    b->cap = cap;
    return HS_OK;
}

static void buf_release(hs_colbuf *b)
{
    if (b->cap)
        hs_free_aligned(b->data);
    memset(b, 0, sizeof *b);
}

static inline bool type_has_offsets(hs_type t)
{
    return t == HS_TYPE_STRING || t == HS_TYPE_BINARY || t == HS_TYPE_LIST || t == HS_TYPE_MAP;
}

static inline bool type_is_fixed(hs_type t)
{
    switch (t) {
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32: case HS_TYPE_UINT64:
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64:
    case HS_TYPE_DECIMAL128: case HS_TYPE_DATE32: case HS_TYPE_TIME32: case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP: case HS_TYPE_FIXED_BINARY: case HS_TYPE_INTERVAL:
        return true;
    default:
        return false;
    }
}

/* Room for n more rows in c's own buffers (not its children), plus
 * value_bytes more bytes for STRING/BINARY. */
static hs_status reserve_self(hs_column *c, int64_t n, size_t value_bytes)
{
    int64_t total;
    if (n < 0 || __builtin_add_overflow(c->length, n, &total) || total > INT64_MAX / 32)
        return HS_NOMEM;
    size_t rows = (size_t)total;
    if (c->validity.data)
        HS_TRY(buf_grow(&c->validity, (rows + 7) / 8, true));
    if (type_has_offsets(c->type))
        HS_TRY(buf_grow(&c->offsets, (rows + 1) * 4, false));
    if (c->type == HS_TYPE_BOOL) {
        HS_TRY(buf_grow(&c->values, (rows + 7) / 8, true));
    } else if (type_is_fixed(c->type)) {
        size_t need;
        if (__builtin_mul_overflow(rows, (size_t)c->width, &need))
            return HS_NOMEM;
        HS_TRY(buf_grow(&c->values, need, false));
    } else if (c->type == HS_TYPE_STRING || c->type == HS_TYPE_BINARY) {
        size_t used = (size_t)HS_COL_OFFSETS(c)[c->length];
        c->values.len = used;  /* bytes past offsets[length] are dead */
        if (value_bytes > SIZE_MAX - used)
            return HS_NOMEM;
        HS_TRY(buf_grow(&c->values, used + value_bytes, false));
    }
    return HS_OK;
}

hs_status hs_col_reserve(hs_column *c, int64_t n_rows, size_t value_bytes)
{
    HS_TRY(reserve_self(c, n_rows, value_bytes));
    if (c->type == HS_TYPE_STRUCT) {
        for (int i = 0; i < c->n_children; i++)
            HS_TRY(hs_col_reserve(c->children[i], n_rows, 0));
    } else if (c->type == HS_TYPE_FIXED_LIST && c->n_children == 1) {
        int64_t m;
        if (__builtin_mul_overflow(n_rows, (int64_t)c->width, &m))
            return HS_NOMEM;
        HS_TRY(hs_col_reserve(c->children[0], m, 0));
    }
    return HS_OK;
}

hs_status hs_col_ensure_validity(hs_column *c)
{
    if (c->validity.data || c->type == HS_TYPE_NA)
        return HS_OK;
    size_t bytes = (size_t)(c->length + 7) / 8;
    c->validity.len = 0;
    HS_TRY(buf_grow(&c->validity, bytes > 0 ? bytes : 8, true));
    bits_fill(c->validity.data, 0, c->length, true);
    c->validity.len = bytes;
    return HS_OK;
}

/* ---- create / free ---- */

static hs_column *col_alloc(hs_type type, int32_t width, int n_children)
{
    hs_column *c = hs_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->type = type;
    c->width = width;
    if (n_children > 0) {
        c->children = hs_calloc((size_t)n_children, sizeof(hs_column *));
        if (!c->children) {
            hs_free(c);
            return NULL;
        }
    }
    c->n_children = n_children;
    return c;
}

/* Writes offsets[0] = 0 for offset types (a fresh, empty column). */
static hs_status col_init_offsets(hs_column *c)
{
    if (!type_has_offsets(c->type))
        return HS_OK;
    HS_TRY(buf_grow(&c->offsets, 4, false));
    HS_COL_OFFSETS(c)[0] = 0;
    c->offsets.len = 4;
    return HS_OK;
}

void hs_col_free(hs_column *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_children; i++)
        hs_col_free(c->children[i]);
    hs_free(c->children);
    buf_release(&c->validity);
    buf_release(&c->offsets);
    buf_release(&c->values);
    hs_col_owner_unref(c->owner);
    hs_free(c);
}

static hs_status check_field_shape(const hs_field *f, hs_error *err)
{
    if ((unsigned)f->type >= HS_TYPE__COUNT)
        return hs_err_set(err, HS_INVALID, "field '%s': unknown type id %d", f->name ? f->name : "",
                          (int)f->type);
    int want = -1;
    switch (f->type) {
    case HS_TYPE_LIST: case HS_TYPE_FIXED_LIST: case HS_TYPE_MAP: want = 1; break;
    case HS_TYPE_STRUCT: break;
    default: want = 0; break;
    }
    if (want >= 0 && f->n_children != want)
        return hs_err_set(err, HS_INVALID, "field '%s': %s needs %d child field(s), has %d",
                          f->name ? f->name : "", hs_type_name(f->type), want, f->n_children);
    if (f->type == HS_TYPE_MAP &&
        (f->children[0].type != HS_TYPE_STRUCT || f->children[0].n_children != 2))
        return hs_err_set(err, HS_INVALID, "field '%s': map entries must be a struct of key and value",
                          f->name ? f->name : "");
    if ((f->type == HS_TYPE_FIXED_BINARY || f->type == HS_TYPE_FIXED_LIST) && f->width < 0)
        return hs_err_set(err, HS_INVALID, "field '%s': negative width %d", f->name ? f->name : "",
                          f->width);
    return HS_OK;
}

static hs_status col_create_rec(const hs_field *f, int64_t capacity, int depth, hs_column **out,
                                hs_error *err)
{
    *out = NULL;
    if (depth > COL_MAX_DEPTH)
        return hs_err_set(err, HS_INVALID, "field '%s': nesting deeper than %d", f->name, COL_MAX_DEPTH);
    HS_TRY(check_field_shape(f, err));
    int32_t width = f->type == HS_TYPE_FIXED_LIST ? f->width : hs_type_width(f);
    hs_column *c = col_alloc(f->type, width, f->n_children);
    if (!c)
        return hs_err_nomem(err, sizeof *c);
    hs_status s = col_init_offsets(c);
    if (s == HS_OK && capacity > 0)
        s = reserve_self(c, capacity, 0);
    if (s != HS_OK) {
        hs_col_free(c);
        return hs_err_nomem(err, (size_t)capacity);
    }
    int64_t child_cap = capacity;
    if (f->type == HS_TYPE_FIXED_LIST && __builtin_mul_overflow(capacity, (int64_t)width, &child_cap))
        child_cap = 0;
    for (int i = 0; i < f->n_children; i++) {
        s = col_create_rec(&f->children[i], child_cap, depth + 1, &c->children[i], err);
        if (s != HS_OK) {
            hs_col_free(c);
            return s;
        }
    }
    *out = c;
    return HS_OK;
}

hs_status hs_col_create(const hs_field *f, int64_t capacity, hs_column **out, hs_error *err)
{
    if (capacity < 0)
        capacity = 0;
    return col_create_rec(f, capacity, 0, out, err);
}

/* An empty column with the same type tree as src. */
static hs_status col_new_like(const hs_column *src, int depth, hs_column **out)
{
    *out = NULL;
    if (depth > COL_MAX_DEPTH)
        return HS_INVALID;
    hs_column *c = col_alloc(src->type, src->width, src->n_children);
    if (!c)
        return HS_NOMEM;
    hs_status s = col_init_offsets(c);
    for (int i = 0; s == HS_OK && i < src->n_children; i++)
        s = col_new_like(src->children[i], depth + 1, &c->children[i]);
    if (s != HS_OK) {
        hs_col_free(c);
        return s;
    }
    *out = c;
    return HS_OK;
}

/* ---- appends ---- */

static inline void validity_len_sync(hs_column *c)
{
    if (c->validity.data)
        c->validity.len = (size_t)(c->length + 7) / 8;
}

hs_status hs_col_append_nulls(hs_column *c, int64_t n)
{
    if (n < 0)
        return HS_INVALID;
    if (n == 0)
        return HS_OK;
    if (c->type == HS_TYPE_NA) {
        c->length += n;
        c->null_count += n;
        return HS_OK;
    }
    HS_TRY(hs_col_ensure_validity(c));
    HS_TRY(reserve_self(c, n, 0));
    bits_fill(c->validity.data, c->length, n, false);
    switch (c->type) {
    case HS_TYPE_BOOL:
        bits_fill(c->values.data, c->length, n, false);
        c->values.len = (size_t)(c->length + n + 7) / 8;
        break;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: case HS_TYPE_LIST: case HS_TYPE_MAP: {
        int32_t *off = HS_COL_OFFSETS(c);
        int32_t last = off[c->length];
        for (int64_t i = 1; i <= n; i++)
            off[c->length + i] = last;
        c->offsets.len = (size_t)(c->length + n + 1) * 4;
        break;
    }
    case HS_TYPE_FIXED_LIST: {
        int64_t m;
        if (c->n_children != 1 || __builtin_mul_overflow(n, (int64_t)c->width, &m))
            return HS_INVALID;
        HS_TRY(hs_col_append_nulls(c->children[0], m));
        break;
    }
    case HS_TYPE_STRUCT:
        for (int i = 0; i < c->n_children; i++)
            HS_TRY(hs_col_append_nulls(c->children[i], n));
        break;
    default:
        if (type_is_fixed(c->type)) {
            memset(c->values.data + (size_t)c->length * c->width, 0, (size_t)n * c->width);
            c->values.len = (size_t)(c->length + n) * c->width;
        }
        break;
    }
    c->length += n;
    c->null_count += n;
    validity_len_sync(c);
    return HS_OK;
}

hs_status hs_col_append_null(hs_column *c)
{
    return hs_col_append_nulls(c, 1);
}

hs_status hs_col_append_fixed(hs_column *c, const void *v)
{
    if (c->type != HS_TYPE_BOOL && !type_is_fixed(c->type))
        return HS_INVALID;
    HS_TRY(reserve_self(c, 1, 0));
    if (c->validity.data)
        hs_bit_set(c->validity.data, c->length);
    if (c->type == HS_TYPE_BOOL) {
        bit_put(c->values.data, c->length, *(const uint8_t *)v != 0);
        c->values.len = (size_t)(c->length + 1 + 7) / 8;
    } else {
        memcpy(c->values.data + (size_t)c->length * c->width, v, (size_t)c->width);
        c->values.len = (size_t)(c->length + 1) * c->width;
    }
    c->length++;
    validity_len_sync(c);
    return HS_OK;
}

hs_status hs_col_append_fixed_n(hs_column *c, const void *v, int64_t n)
{
    if (c->type != HS_TYPE_BOOL && !type_is_fixed(c->type))
        return HS_INVALID;
    if (n <= 0)
        return n == 0 ? HS_OK : HS_INVALID;
    HS_TRY(reserve_self(c, n, 0));
    if (c->validity.data)
        bits_fill(c->validity.data, c->length, n, true);
    if (c->type == HS_TYPE_BOOL) {
        const uint8_t *b = v;
        for (int64_t i = 0; i < n; i++)
            bit_put(c->values.data, c->length + i, b[i] != 0);
        c->values.len = (size_t)(c->length + n + 7) / 8;
    } else {
        memcpy(c->values.data + (size_t)c->length * c->width, v, (size_t)n * c->width);
        c->values.len = (size_t)(c->length + n) * c->width;
    }
    c->length += n;
    validity_len_sync(c);
    return HS_OK;
}

hs_status hs_col_append_bytes(hs_column *c, const void *p, size_t n)
{
    if (c->type == HS_TYPE_FIXED_BINARY) {
        if (n != (size_t)c->width)
            return HS_INVALID;
        return hs_col_append_fixed(c, p);
    }
    if (c->type != HS_TYPE_STRING && c->type != HS_TYPE_BINARY)
        return HS_INVALID;
    int32_t cur = HS_COL_OFFSETS(c)[c->length];
    if (n > (size_t)(INT32_MAX - cur))
        return HS_INVALID;  /* the column's 2 GiB of value bytes are full */
    HS_TRY(reserve_self(c, 1, n));
    if (n)
        memcpy(c->values.data + cur, p, n);
    int32_t *off = HS_COL_OFFSETS(c);
    off[c->length + 1] = cur + (int32_t)n;
    c->values.len = (size_t)cur + n;
    c->offsets.len = (size_t)(c->length + 2) * 4;
    if (c->validity.data)
        hs_bit_set(c->validity.data, c->length);
    c->length++;
    validity_len_sync(c);
    return HS_OK;
}

hs_status hs_col_list_end(hs_column *c)
{
    if (c->n_children != 1)
        return HS_INVALID;
    int64_t clen = c->children[0]->length;
    if (c->type == HS_TYPE_FIXED_LIST) {
        if (clen != (c->length + 1) * (int64_t)c->width)
            return HS_INVALID;
        HS_TRY(reserve_self(c, 1, 0));
    } else if (c->type == HS_TYPE_LIST || c->type == HS_TYPE_MAP) {
        if (clen > INT32_MAX || clen < HS_COL_OFFSETS(c)[c->length])
            return HS_INVALID;
        HS_TRY(reserve_self(c, 1, 0));
        HS_COL_OFFSETS(c)[c->length + 1] = (int32_t)clen;
        c->offsets.len = (size_t)(c->length + 2) * 4;
    } else {
        return HS_INVALID;
    }
    if (c->validity.data)
        hs_bit_set(c->validity.data, c->length);
    c->length++;
    validity_len_sync(c);
    return HS_OK;
}

hs_status hs_col_struct_append_valid(hs_column *c)
{
    if (c->type != HS_TYPE_STRUCT)
        return HS_INVALID;
    for (int i = 0; i < c->n_children; i++)
        if (c->children[i]->length != c->length + 1)
            return HS_INVALID;
    HS_TRY(reserve_self(c, 1, 0));
    if (c->validity.data)
        hs_bit_set(c->validity.data, c->length);
    c->length++;
    validity_len_sync(c);
    return HS_OK;
}

/* ---- equality ---- */

static bool same_shape(const hs_column *a, const hs_column *b, int depth)
{
    if (a->type != b->type || a->width != b->width || a->n_children != b->n_children ||
        depth > COL_MAX_DEPTH)
        return false;
    for (int i = 0; i < a->n_children; i++)
        if (!same_shape(a->children[i], b->children[i], depth + 1))
            return false;
    return true;
}

/* Rows [ai, ai+n) of a equal rows [bi, bi+n) of b (shapes already match). */
static bool eq_rows(const hs_column *a, int64_t ai, const hs_column *b, int64_t bi, int64_t n)
{
    if (n == 0 || a->type == HS_TYPE_NA)
        return true;
    for (int64_t i = 0; i < n; i++)
        if (hs_col_is_valid(a, ai + i) != hs_col_is_valid(b, bi + i))
            return false;
    switch (a->type) {
    case HS_TYPE_BOOL:
        for (int64_t i = 0; i < n; i++)
            if (hs_col_is_valid(a, ai + i) &&
                hs_bit_get(a->values.data, ai + i) != hs_bit_get(b->values.data, bi + i))
                return false;
        return true;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *oa = HS_COL_OFFSETS(a), *ob = HS_COL_OFFSETS(b);
        for (int64_t i = 0; i < n; i++) {
            if (!hs_col_is_valid(a, ai + i))
                continue;
            int32_t la = oa[ai + i + 1] - oa[ai + i], lb = ob[bi + i + 1] - ob[bi + i];
            if (la != lb || (la && memcmp(a->values.data + oa[ai + i], b->values.data + ob[bi + i],
                                          (size_t)la) != 0))
                return false;
        }
        return true;
    }
    case HS_TYPE_LIST: case HS_TYPE_MAP: {
        const int32_t *oa = HS_COL_OFFSETS(a), *ob = HS_COL_OFFSETS(b);
        for (int64_t i = 0; i < n; i++) {
            if (!hs_col_is_valid(a, ai + i))
                continue;
            int32_t la = oa[ai + i + 1] - oa[ai + i], lb = ob[bi + i + 1] - ob[bi + i];
            if (la != lb || !eq_rows(a->children[0], oa[ai + i], b->children[0], ob[bi + i], la))
                return false;
        }
        return true;
    }
    case HS_TYPE_FIXED_LIST: {
        int64_t w = a->width;
        for (int64_t i = 0; i < n; i++)
            if (hs_col_is_valid(a, ai + i) &&
                !eq_rows(a->children[0], (ai + i) * w, b->children[0], (bi + i) * w, w))
                return false;
        return true;
    }
    case HS_TYPE_STRUCT: {
        /* Compare runs of valid rows at once. */
        int64_t i = 0;
        while (i < n) {
            if (!hs_col_is_valid(a, ai + i)) {
                i++;
                continue;
            }
            int64_t j = i;
            while (j < n && hs_col_is_valid(a, ai + j))
                j++;
            for (int k = 0; k < a->n_children; k++)
                if (!eq_rows(a->children[k], ai + i, b->children[k], bi + i, j - i))
                    return false;
            i = j;
        }
        return true;
    }
    default: {
        size_t w = (size_t)a->width;
        const uint8_t *pa = a->values.data, *pb = b->values.data;
        if (w == 0)
            return true;
        for (int64_t i = 0; i < n; i++)
            if (hs_col_is_valid(a, ai + i) &&
                memcmp(pa + (size_t)(ai + i) * w, pb + (size_t)(bi + i) * w, w) != 0)
                return false;
        return true;
    }
    }
}

bool hs_col_equals(const hs_column *a, const hs_column *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->length != b->length || !same_shape(a, b, 0))
        return false;
    return eq_rows(a, 0, b, 0, a->length);
}

/* ---- deep copies ---- */

/* Validity of rows [s, s+n) of src appended to dst (dst->length not yet advanced). */
static hs_status copy_validity_range(hs_column *dst, const hs_column *src, int64_t s, int64_t n)
{
    int64_t valid = src->validity.data ? hs_bits_count(src->validity.data, s, n) : n;
    if (valid < n && !dst->validity.data)
        HS_TRY(hs_col_ensure_validity(dst));
    if (dst->validity.data) {
        HS_TRY(buf_grow(&dst->validity, (size_t)(dst->length + n + 7) / 8, true));
        if (src->validity.data)
            hs_bits_copy(dst->validity.data, dst->length, src->validity.data, s, n);
        else
            bits_fill(dst->validity.data, dst->length, n, true);
    }
    dst->null_count += n - valid;
    return HS_OK;
}

static hs_status append_range(hs_column *dst, const hs_column *src, int64_t s, int64_t n);

/* LIST/MAP/STRING/BINARY: appends rebased offsets of rows [s, s+n); returns the
 * source element range [*es, *es + *en). */
static hs_status append_offsets_range(hs_column *dst, const hs_column *src, int64_t s, int64_t n,
                                      int64_t *es, int64_t *en)
{
    const int32_t *so = HS_COL_OFFSETS(src);
    int32_t base = so[s];
    int64_t count = (int64_t)so[s + n] - base;
    int32_t *d = HS_COL_OFFSETS(dst);
    int64_t dbase = d[dst->length];
    if (count < 0 || dbase + count > INT32_MAX)
        return HS_INVALID;
    d = HS_COL_OFFSETS(dst);
    for (int64_t i = 1; i <= n; i++)
        d[dst->length + i] = (int32_t)(dbase + (so[s + i] - base));
    dst->offsets.len = (size_t)(dst->length + n + 1) * 4;
    *es = base;
    *en = count;
    return HS_OK;
}

static hs_status append_take(hs_column *dst, const hs_column *src, const int64_t *idx, int64_t n);

/* True when a null LIST/MAP row in [s, s+n) has a non-empty range (Arrow
 * allows it; our columns do not). */
static bool null_rows_own_elements(const hs_column *c, int64_t s, int64_t n)
{
    if (!c->validity.data || c->null_count == 0)
        return false;
    const int32_t *o = HS_COL_OFFSETS(c);
    for (int64_t i = s; i < s + n; i++)
        if (o[i + 1] != o[i] && !hs_bit_get(c->validity.data, i))
            return true;
    return false;
}

static hs_status append_range(hs_column *dst, const hs_column *src, int64_t s, int64_t n)
{
    if (n == 0)
        return HS_OK;
    if ((src->type == HS_TYPE_LIST || src->type == HS_TYPE_MAP) && null_rows_own_elements(src, s, n)) {
        /* Copy row by row, dropping the elements under null rows. */
        int64_t *idx = hs_malloc(sizeof(int64_t) * (size_t)n);
        if (!idx)
            return HS_NOMEM;
        for (int64_t i = 0; i < n; i++)
            idx[i] = s + i;
        hs_status st = append_take(dst, src, idx, n);
        hs_free(idx);
        return st;
    }
    if (src->type == HS_TYPE_NA) {
        dst->length += n;
        dst->null_count += n;
        return HS_OK;
    }
    size_t bytes = 0;
    if (src->type == HS_TYPE_STRING || src->type == HS_TYPE_BINARY) {
        const int32_t *so = HS_COL_OFFSETS(src);
        bytes = (size_t)(so[s + n] - so[s]);
    }
    HS_TRY(reserve_self(dst, n, bytes));
    HS_TRY(copy_validity_range(dst, src, s, n));
    switch (src->type) {
    case HS_TYPE_BOOL:
        hs_bits_copy(dst->values.data, dst->length, src->values.data, s, n);
        dst->values.len = (size_t)(dst->length + n + 7) / 8;
        break;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        int64_t es, en;
        int32_t dpos = HS_COL_OFFSETS(dst)[dst->length];
        HS_TRY(append_offsets_range(dst, src, s, n, &es, &en));
        if (en)
            memcpy(dst->values.data + dpos, src->values.data + es, (size_t)en);
        dst->values.len = (size_t)dpos + (size_t)en;
        break;
    }
    case HS_TYPE_LIST: case HS_TYPE_MAP: {
        int64_t es, en;
        HS_TRY(append_offsets_range(dst, src, s, n, &es, &en));
        HS_TRY(append_range(dst->children[0], src->children[0], es, en));
        break;
    }
    case HS_TYPE_FIXED_LIST:
        HS_TRY(append_range(dst->children[0], src->children[0], s * src->width, n * src->width));
        break;
    case HS_TYPE_STRUCT:
        for (int i = 0; i < src->n_children; i++)
            HS_TRY(append_range(dst->children[i], src->children[i], s, n));
        break;
    default: {
        size_t w = (size_t)src->width;
        if (w)
            memcpy(dst->values.data + (size_t)dst->length * w, src->values.data + (size_t)s * w, n * w);
        dst->values.len = (size_t)(dst->length + n) * w;
        break;
    }
    }
    dst->length += n;
    validity_len_sync(dst);
    return HS_OK;
}

/* Validity of take: row i valid iff idx[i] >= 0 and src row idx[i] valid. */
static hs_status take_validity(hs_column *dst, const hs_column *src, const int64_t *idx, int64_t n)
{
    bool maybe_null = src->validity.data != NULL;
    for (int64_t i = 0; !maybe_null && i < n; i++)
        maybe_null = idx[i] < 0;
    if (maybe_null && !dst->validity.data)
        HS_TRY(hs_col_ensure_validity(dst));
    if (!dst->validity.data)
        return HS_OK;
    HS_TRY(buf_grow(&dst->validity, (size_t)(dst->length + n + 7) / 8, true));
    int64_t nulls = 0;
    for (int64_t i = 0; i < n; i++) {
        bool v = idx[i] >= 0 && hs_col_is_valid(src, idx[i]);
        bit_put(dst->validity.data, dst->length + i, v);
        nulls += !v;
    }
    dst->null_count += nulls;
    return HS_OK;
}

#define TAKE_FIXED(T)                                                         \
    do {                                                                      \
        T *d_ = (T *)(dst->values.data) + dst->length;                        \
        const T *s_ = (const T *)src->values.data;                            \
        for (int64_t i = 0; i < n; i++)                                       \
            d_[i] = idx[i] >= 0 ? s_[idx[i]] : (T)0;                          \
    } while (0)

static hs_status append_take(hs_column *dst, const hs_column *src, const int64_t *idx, int64_t n)
{
    if (n == 0)
        return HS_OK;
    if (src->type == HS_TYPE_NA) {
        dst->length += n;
        dst->null_count += n;
        return HS_OK;
    }
    size_t bytes = 0;
    int64_t n_elems = 0;
    bool nested = src->type == HS_TYPE_LIST || src->type == HS_TYPE_MAP;
    if (type_has_offsets(src->type)) {
        const int32_t *so = HS_COL_OFFSETS(src);
        for (int64_t i = 0; i < n; i++)
            if (idx[i] >= 0 && (!nested || hs_col_is_valid(src, idx[i])))
                n_elems += so[idx[i] + 1] - so[idx[i]];
        bytes = (size_t)n_elems;
        if (HS_COL_OFFSETS(dst)[dst->length] + n_elems > INT32_MAX)
            return HS_INVALID;
    }
    HS_TRY(reserve_self(dst, n, src->type == HS_TYPE_STRING || src->type == HS_TYPE_BINARY ? bytes : 0));
    HS_TRY(take_validity(dst, src, idx, n));
    switch (src->type) {
    case HS_TYPE_BOOL:
        for (int64_t i = 0; i < n; i++)
            bit_put(dst->values.data, dst->length + i, idx[i] >= 0 && hs_bit_get(src->values.data, idx[i]));
        dst->values.len = (size_t)(dst->length + n + 7) / 8;
        break;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *so = HS_COL_OFFSETS(src);
        int32_t *d = HS_COL_OFFSETS(dst);
        int32_t pos = d[dst->length];
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] >= 0) {
                int32_t a = so[idx[i]], len = so[idx[i] + 1] - a;
                if (len > 16) {
                    memcpy(dst->values.data + pos, src->values.data + a, (size_t)len);
                } else if (len > 0) {  /* short strings (flags, codes): no call per row;
                                        * empty ones may have no value buffer at all */
                    uint8_t *dp = dst->values.data + pos;
                    const uint8_t *sp = src->values.data + a;
                    for (int32_t q = 0; q < len; q++)
                        dp[q] = sp[q];
                }
                pos += len;
            }
            d[dst->length + i + 1] = pos;
        }
        dst->values.len = (size_t)pos;
        dst->offsets.len = (size_t)(dst->length + n + 1) * 4;
        break;
    }
    case HS_TYPE_LIST: case HS_TYPE_MAP: {
        const int32_t *so = HS_COL_OFFSETS(src);
        int64_t *cidx = hs_malloc(sizeof(int64_t) * (size_t)(n_elems > 0 ? n_elems : 1));
        if (!cidx)
            return HS_NOMEM;
        int32_t *d = HS_COL_OFFSETS(dst);
        int32_t pos = d[dst->length];
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] >= 0 && hs_col_is_valid(src, idx[i]))  /* null rows: empty range */
                for (int32_t e = so[idx[i]]; e < so[idx[i] + 1]; e++)
                    cidx[k++] = e;
            d[dst->length + i + 1] = pos + (int32_t)k;
        }
        dst->offsets.len = (size_t)(dst->length + n + 1) * 4;
        hs_status s = append_take(dst->children[0], src->children[0], cidx, k);
        hs_free(cidx);
        HS_TRY(s);
        break;
    }
    case HS_TYPE_FIXED_LIST: {
        int64_t w = src->width, m;
        if (__builtin_mul_overflow(n, w, &m))
            return HS_NOMEM;
        int64_t *cidx = hs_malloc(sizeof(int64_t) * (size_t)(m > 0 ? m : 1));
        if (!cidx)
            return HS_NOMEM;
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = 0; e < w; e++)
                cidx[i * w + e] = idx[i] >= 0 ? idx[i] * w + e : -1;
        hs_status s = append_take(dst->children[0], src->children[0], cidx, m);
        hs_free(cidx);
        HS_TRY(s);
        break;
    }
    case HS_TYPE_STRUCT:
        for (int i = 0; i < src->n_children; i++)
            HS_TRY(append_take(dst->children[i], src->children[i], idx, n));
        break;
    default:
        switch (src->width) {
        case 1: TAKE_FIXED(uint8_t); break;
        case 2: TAKE_FIXED(uint16_t); break;
        case 4: TAKE_FIXED(uint32_t); break;
        case 8: TAKE_FIXED(uint64_t); break;
        case 16: { /* decimal128: two words, not a memcpy call per row */
            uint64_t *d = (uint64_t *)dst->values.data + 2 * dst->length;
            const uint64_t *sv = (const uint64_t *)src->values.data;
            for (int64_t i = 0; i < n; i++) {
                d[2 * i] = idx[i] >= 0 ? sv[2 * idx[i]] : 0;
                d[2 * i + 1] = idx[i] >= 0 ? sv[2 * idx[i] + 1] : 0;
            }
            break;
        }
        default: {
            size_t w = (size_t)src->width;
            uint8_t *d = dst->values.data + (size_t)dst->length * w;
            for (int64_t i = 0; i < n; i++) {
                if (idx[i] >= 0)
                    memcpy(d + (size_t)i * w, src->values.data + (size_t)idx[i] * w, w);
                else if (w)
                    memset(d + (size_t)i * w, 0, w);
            }
        }
        }
        dst->values.len = (size_t)(dst->length + n) * src->width;
        break;
    }
    dst->length += n;
    validity_len_sync(dst);
    return HS_OK;
}

hs_status hs_col_take_nullable(const hs_column *c, const int64_t *idx, int64_t n, hs_column **out,
                               hs_error *err)
{
    *out = NULL;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < -1 || idx[i] >= c->length)
            return hs_err_set(err, HS_INVALID, "take: index %lld at position %lld out of range [0, %lld)",
                              (long long)idx[i], (long long)i, (long long)c->length);
    hs_column *d;
    hs_status s = col_new_like(c, 0, &d);
    if (s != HS_OK)
        return hs_err_set(err, s, "take: cannot create a %s column", hs_type_name(c->type));
    s = append_take(d, c, idx, n);
    if (s != HS_OK) {
        hs_col_free(d);
        return hs_err_set(err, s, "take: copying %lld rows of a %s column failed", (long long)n,
                          hs_type_name(c->type));
    }
    *out = d;
    return HS_OK;
}

hs_status hs_col_take(const hs_column *c, const int64_t *idx, int64_t n, hs_column **out,
                      hs_error *err)
{
    *out = NULL;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= c->length)
            return hs_err_set(err, HS_INVALID, "take: index %lld at position %lld out of range [0, %lld)",
                              (long long)idx[i], (long long)i, (long long)c->length);
    return hs_col_take_nullable(c, idx, n, out, err);
}

hs_status hs_col_slice(const hs_column *c, int64_t start, int64_t n, hs_column **out, hs_error *err)
{
    *out = NULL;
    if (start < 0 || n < 0 || start > c->length || n > c->length - start)
        return hs_err_set(err, HS_INVALID, "slice [%lld, +%lld) out of range of a column of %lld rows",
                          (long long)start, (long long)n, (long long)c->length);
    hs_column *d;
    hs_status s = col_new_like(c, 0, &d);
    if (s != HS_OK)
        return hs_err_set(err, s, "slice: cannot create a %s column", hs_type_name(c->type));
    s = append_range(d, c, start, n);
    if (s != HS_OK) {
        hs_col_free(d);
        return hs_err_set(err, s, "slice: copying %lld rows of a %s column failed", (long long)n,
                          hs_type_name(c->type));
    }
    *out = d;
    return HS_OK;
}

hs_status hs_col_append_column(hs_column *dst, const hs_column *src, hs_error *err)
{
    if (!same_shape(dst, src, 0))
        return hs_err_set(err, HS_INVALID, "append: column types differ (%s into %s)",
                          hs_type_name(src->type), hs_type_name(dst->type));
    hs_status s = append_range(dst, src, 0, src->length);
    if (s != HS_OK)
        return hs_err_set(err, s, "append: copying %lld rows of a %s column failed",
                          (long long)src->length, hs_type_name(src->type));
    return HS_OK;
}

/* ---- validation ---- */

/* strict: also the compact invariants of this file's header (offsets[0] == 0,
 * child lengths exact).  Otherwise only what the Arrow format requires. */
static hs_status validate_rec(const hs_column *c, const hs_field *f, bool strict, int depth,
                              hs_error *err)
{
    const char *nm = f->name ? f->name : "";
    const char *tn = hs_type_name(f->type);
    if (depth > COL_MAX_DEPTH)
        return HS_CORRUPT_AT(err, "column '%s': nested deeper than %d", nm, COL_MAX_DEPTH);
    if (!c)
        return HS_CORRUPT_AT(err, "column '%s': missing", nm);
    if (c->type != f->type)
        return HS_CORRUPT_AT(err, "column '%s': type %s, field says %s", nm, hs_type_name(c->type), tn);
    if (check_field_shape(f, NULL) != HS_OK || c->n_children != f->n_children)
        return HS_CORRUPT_AT(err, "column '%s' (%s): %d children, field has %d", nm, tn,
                             c->n_children, f->n_children);
    int64_t n = c->length;
    if (n < 0 || n > INT64_MAX / 64 || c->null_count < 0 || c->null_count > n)
        return HS_CORRUPT_AT(err, "column '%s' (%s): length %lld, null_count %lld", nm, tn,
                             (long long)n, (long long)c->null_count);
    if (c->type == HS_TYPE_NA) {
        if (c->null_count != n)
            return HS_CORRUPT_AT(err, "column '%s' (null): null_count %lld != length %lld", nm,
                                 (long long)c->null_count, (long long)n);
        return HS_OK;
    }
    if (c->validity.data) {
        if (c->validity.len < (size_t)(n + 7) / 8)
            return HS_CORRUPT_AT(err, "column '%s' (%s): validity has %zu bytes, %lld rows need %lld",
                                 nm, tn, c->validity.len, (long long)n, (long long)(n + 7) / 8);
        int64_t nulls = n - hs_bits_count(c->validity.data, 0, n);
        if (nulls != c->null_count)
            return HS_CORRUPT_AT(err, "column '%s' (%s): null_count %lld but the validity bitmap has %lld nulls",
                                 nm, tn, (long long)c->null_count, (long long)nulls);
    } else if (c->null_count != 0) {
        return HS_CORRUPT_AT(err, "column '%s' (%s): null_count %lld without a validity bitmap", nm,
                             tn, (long long)c->null_count);
    }
    if (c->type == HS_TYPE_BOOL) {
        if (c->values.len < (size_t)(n + 7) / 8 || (n > 0 && !c->values.data))
            return HS_CORRUPT_AT(err, "column '%s' (bool): values have %zu bytes for %lld rows", nm,
                                 c->values.len, (long long)n);
    } else if (type_is_fixed(c->type)) {
        if (c->width != hs_type_width(f))
            return HS_CORRUPT_AT(err, "column '%s' (%s): width %d, field says %d", nm, tn, c->width,
                                 hs_type_width(f));
        if (c->values.len < (size_t)n * (size_t)c->width || (n > 0 && c->width > 0 && !c->values.data))
            return HS_CORRUPT_AT(err, "column '%s' (%s): values have %zu bytes, %lld rows of %d need more",
                                 nm, tn, c->values.len, (long long)n, c->width);
    }
    if (type_has_offsets(c->type)) {
        if (c->offsets.len < (size_t)(n + 1) * 4 || !c->offsets.data)
            return HS_CORRUPT_AT(err, "column '%s' (%s): offsets have %zu bytes, %lld rows need %lld",
                                 nm, tn, c->offsets.len, (long long)n, (long long)(n + 1) * 4);
        const int32_t *off = HS_COL_OFFSETS(c);
        if (off[0] < 0 || (strict && off[0] != 0))
            return HS_CORRUPT_AT(err, "column '%s' (%s): offsets[0] = %d", nm, tn, off[0]);
        for (int64_t i = 0; i < n; i++)
            if (off[i + 1] < off[i])
                return HS_CORRUPT_AT(err, "column '%s' (%s): offsets[%lld] = %d < offsets[%lld] = %d",
                                     nm, tn, (long long)(i + 1), off[i + 1], (long long)i, off[i]);
        int64_t end = off[n];
        if (c->type == HS_TYPE_STRING || c->type == HS_TYPE_BINARY) {
            if ((size_t)end > c->values.len || (end > 0 && !c->values.data))
                return HS_CORRUPT_AT(err, "column '%s' (%s): offsets end at %lld past %zu value bytes",
                                     nm, tn, (long long)end, c->values.len);
        } else {
            int64_t cl = c->children[0]->length;
            if (end > cl || (strict && end != cl))
                return HS_CORRUPT_AT(err, "column '%s' (%s): offsets end at %lld but the child has %lld elements",
                                     nm, tn, (long long)end, (long long)cl);
            if (strict && c->validity.data) {
                for (int64_t i = 0; i < n; i++)
                    if (off[i + 1] != off[i] && !hs_bit_get(c->validity.data, i))
                        return HS_CORRUPT_AT(err, "column '%s' (%s): null row %lld owns %d elements",
                                             nm, tn, (long long)i, off[i + 1] - off[i]);
            }
        }
    }
    if (c->type == HS_TYPE_FIXED_LIST) {
        int64_t need;
        if (c->width != f->width || __builtin_mul_overflow(n, (int64_t)c->width, &need))
            return HS_CORRUPT_AT(err, "column '%s' (fixed_size_list): width %d, field says %d", nm,
                                 c->width, f->width);
        int64_t cl = c->children[0]->length;
        if (cl < need || (strict && cl != need))
            return HS_CORRUPT_AT(err, "column '%s' (fixed_size_list[%d]): %lld rows need %lld elements, child has %lld",
                                 nm, c->width, (long long)n, (long long)need, (long long)cl);
    }
    if (c->type == HS_TYPE_STRUCT) {
        for (int i = 0; i < c->n_children; i++) {
            int64_t cl = c->children[i] ? c->children[i]->length : -1;
            if (cl < n || (strict && cl != n))
                return HS_CORRUPT_AT(err, "column '%s' (struct): child '%s' has %lld rows, struct has %lld",
                                     nm, f->children[i].name, (long long)cl, (long long)n);
        }
    }
    for (int i = 0; i < c->n_children; i++) {
        hs_status s = validate_rec(c->children[i], &f->children[i], strict, depth + 1, err);
        if (s != HS_OK) {
            hs_err_prefix(err, "in '%s'", nm);
            return s;
        }
    }
    if (c->type == HS_TYPE_MAP) {
        const hs_column *keys = c->children[0]->children[0];
        if (keys->null_count != 0)
            return HS_CORRUPT_AT(err, "column '%s' (map): %lld null keys", nm, (long long)keys->null_count);
    }
    return HS_OK;
}

hs_status hs_col_validate(const hs_column *c, const hs_field *f, hs_error *err)
{
    return validate_rec(c, f, true, 0, err);
}

hs_status hs_col_validate_arrow(const hs_column *c, const hs_field *f, hs_error *err)
{
    return validate_rec(c, f, false, 0, err);
}

/* ---- batches ---- */

hs_status hs_batch_create(const hs_field *schema, int64_t capacity, hs_batch **out, hs_error *err)
{
    *out = NULL;
    if (schema->type != HS_TYPE_STRUCT)
        return hs_err_set(err, HS_INVALID, "batch schema must be a struct, got %s",
                          hs_type_name(schema->type));
    hs_batch *b = hs_calloc(1, sizeof *b);
    if (!b)
        return hs_err_nomem(err, sizeof *b);
    if (hs_field_copy(schema, &b->schema) != HS_OK) {
        hs_free(b);
        return hs_err_nomem(err, 0);
    }
    if (schema->n_children > 0) {
        b->cols = hs_calloc((size_t)schema->n_children, sizeof(hs_column *));
        if (!b->cols) {
            hs_batch_free(b);
            return hs_err_nomem(err, 0);
        }
    }
    for (int i = 0; i < schema->n_children; i++) {
        hs_status s = hs_col_create(&schema->children[i], capacity, &b->cols[i], err);
        if (s != HS_OK) {
            hs_batch_free(b);
            return s;
        }
        b->n_cols = i + 1;
    }
    *out = b;
    return HS_OK;
}

void hs_batch_free(hs_batch *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n_cols; i++)
        hs_col_free(b->cols[i]);
    hs_free(b->cols);
    hs_field_clear(&b->schema);
    hs_free(b);
}

int hs_batch_find(const hs_batch *b, const char *name)
{
    for (int i = 0; i < b->schema.n_children && i < b->n_cols; i++)
        if (b->schema.children[i].name && strcmp(b->schema.children[i].name, name) == 0)
            return i;
    return -1;
}
