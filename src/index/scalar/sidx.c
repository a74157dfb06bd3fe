/*
 * index/scalar/sidx.c - the scalar index file format, the builder (collect,
 * sort, choose a kind), sidx_open and the lookup dispatch.  inverted.c and
 * range.c own the layout of their sections.
 *
 * File format (all integers little-endian; sections start 8-byte aligned,
 * zero padding between them):
 *
 *   offset  size  field
 *   ------  ----  -----------------------------------------------------------
 *        0     4  magic "HSIX"
 *        4     2  format version (1)
 *        6     1  kind: 1 inverted, 2 range
 *        7     1  value kind (pr_vkind): 1 I64, 2 F64, 3 I128, 4 BYTES
 *        8     4  flags: bit 0 WIDE (64-bit offsets in the values table, and
 *                 for inverted in the postings offsets); other bits 0
 *       12     4  decimal scale (I128; else 0), int32
 *       16     4  field id of the column (informational; -1 unknown), int32
 *       20     4  range: pairs per block (1..2^20); inverted: 0
 *       24     8  n_rows: rows of the data file (positions 0..n_rows-1), < 2^32
 *       32     8  n_distinct: inverted: distinct non-null values; range: -1
 *       40     8  n_nulls
 *       48     8  data_file_size: bytes of the indexed data file
 *       56     8  range: n_blocks = ceil((n_rows - n_nulls) / pairs per block);
 *                 inverted: 0
 *       64    64  section table: 4 x (u64 offset from the file start, u64 length)
 *                   S0 nulls    portable roaring bitmap of the null rows;
 *                               empty (length 0) when n_nulls = 0
 *                   S1 values   values table (below): inverted: the n_distinct
 *                               distinct values, strictly increasing; range:
 *                               the fences, (first, last) value of each block
 *                   S2 offsets  inverted: n_distinct + 1 offsets into S3 (u32,
 *                               u64 when WIDE); range: n_blocks + 1 u64
 *                               offsets into S3; first 0, last = S3 length
 *                   S3 data     inverted: postings; range: blocks (range.c)
 *      ...        sections
 *     n-12     8  xxh64 (seed 0) of bytes [0, n-12)
 *      n-4     4  magic "HSIX"
 *
 *   Values table of n values of kind k: I64 int64, F64 double, I128 16-byte
 *   two's complement unscaled value: n * width bytes.  BYTES: n + 1 offsets
 *   (u32, u64 when WIDE) relative to the byte area that follows them, first
 *   0, non-decreasing, last = byte area length; then the bytes.
 *
 *   Order: values sort as pr_val_cmp orders them (integers signed, doubles
 *   with -0.0 = 0.0 and NaN last, decimals by unscaled value, bytes as
 *   unsigned bytes then length).  F64 values are stored canonical: 0.0 for
 *   -0.0 and one quiet NaN.
 *
 *   Postings (inverted, S3) and blocks (range, S3): see inverted.c and
 *   range.c.
 *
 * sidx_open checks the size, both magics, the checksum, the version, every
 * header field against the others and against the caller's column type,
 * the section table, the values table (bounds, offsets, order) and the
 * offsets table of S2.  Bitmaps and blocks are decoded lazily by each
 * lookup, which validates what it touches (a portable bitmap is checked
 * container by container before roaring_bitmap_portable_deserialize_safe
 * sees it; positions must be < n_rows), so a file with a valid checksum but
 * a bad interior still yields HS_CORRUPT, never a crash.
 *
 * Lookup semantics: sidx_lookup returns the rows for which the leaf is TRUE
 * under SQL's three-valued logic, exactly as pr_filter_eval decides it:
 * nulls match only IS NULL; a NaN value or literal matches only != (and a
 * NaN literal = / <= / >= matches NaN values, as Iceberg's is_nan).  Each
 * comparison is a probe (sidx_int.h) whose rows are one span of the kind's
 * sorted order; != is "not null" minus =, NOT IN is "not null" minus IN,
 * and sidx_lookup_all intersects the spans of an AND's comparisons before
 * reading any row.  Rows are gathered by a sidx_acc (bitmaps, buffered
 * positions, or a dense bitset when many) into one roaring bitmap.
 *
 * Builder: rows are collected per batch into flat arrays (no per-row
 * allocation).  I64/F64 values become order-preserving uint64 keys beside
 * their positions, sorted by a radix sort (one MSD pass to cache-sized
 * buckets, then LSD passes over the bytes that vary; stable, so positions
 * of equal values stay ascending).  I128/BYTES values go through a hash
 * dictionary (value -> id) whose distinct values are sorted once (radix by
 * 8-byte chunks) and the rows then placed by a counting sort on the rank;
 * when the dictionary grows past 65536 values and a quarter of the rows,
 * it is dropped and the rows' values are kept back to back and sorted
 * directly.  Memory: about 12 bytes per non-null row (numbers), or 4 bytes
 * per row plus the distinct values (dictionary), or the values plus 12
 * bytes per row (rows mode); up to twice that while sorting.  An opened
 * index is never written: lookups may run concurrently.
 *
 * Ownership: the builder borrows f until finish/free and copies values out
 * of each batch; an opened index borrows the file image.
 */
#include "index/scalar/sidx_int.h"

#include "base/hash.h"
#include "base/hashmap.h"
#include "base/mem.h"
#include "base/memlimit.h"
#include "columnar/jsonl.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ */
/* names and types                                                     */

bool sidx_kind_from_name(const char *name, sidx_kind *out)
{
    static const char *const names[] = {"auto", "inverted", "range"};
    for (int k = 0; k < 3; k++)
        if (name && strcmp(name, names[k]) == 0) {
            *out = (sidx_kind)k;
            return true;
        }
    return false;
}

const char *sidx_kind_name(sidx_kind k)
{
    switch (k) {
    case SIDX_AUTO: return "auto";
    case SIDX_INVERTED: return "inverted";
    case SIDX_RANGE: return "range";
    }
    return "?";
}

bool sidx_supports(const hs_field *f)
{
    return f && pr_kind_of(f) != PR_V_NULL;
}

int sidx_value_width(pr_vkind vk)
{
    return vk == PR_V_I64 || vk == PR_V_F64 ? 8 : vk == PR_V_I128 ? 16 : 0;
}

double sidx_canon_f64(double x)
{
    if (isnan(x))
        return NAN;
    return x == 0 ? 0.0 : x;
}

uint64_t sidx_f64_key(double x)
{
    uint64_t b;
    x = sidx_canon_f64(x);
    if (isnan(x))
        b = 0x7FF8000000000000ull;
    else
        memcpy(&b, &x, 8);
    return (b >> 63) ? ~b : b | (1ull << 63);
}

double sidx_key_f64(uint64_t k)
{
    uint64_t b = (k >> 63) ? k & ~(1ull << 63) : ~k;
    double x;
    memcpy(&x, &b, 8);
    return x;
}

hs_status sidx_align8(hs_buf *out, size_t file_start)
{
    size_t pad = (8 - (out->len - file_start) % 8) % 8;
    return pad ? hs_buf_append_zeros(out, pad) : HS_OK;
}

/* ------------------------------------------------------------------ */
/* values tables                                                       */

hs_status sidx_sorted_put_value(const sidx_sorted *s, int64_t j, hs_buf *out)
{
    if (s->keys) {
        uint64_t k = s->keys[j];
        if (s->vk == PR_V_F64) {
            double x = sidx_key_f64(k);
            return hs_buf_append(out, &x, 8);
        }
        int64_t v = sidx_key_i64(k);
        return hs_buf_append(out, &v, 8);
    }
    uint32_t r = s->rank[j];
    return hs_buf_append(out, s->dict_p[r], s->dict_n[r]);
}

hs_status sidx_put_values(const sidx_sorted *s, const int64_t *idx, int64_t n, bool wide,
                          hs_buf *out)
{
    if (s->vk == PR_V_BYTES) {
        uint64_t off = 0;
        HS_TRY(hs_buf_reserve(out, (size_t)(n + 1) * (wide ? 8 : 4)));
        for (int64_t i = 0; i <= n; i++) {
            HS_TRY(wide ? hs_buf_put_u64le(out, off) : hs_buf_put_u32le(out, (uint32_t)off));
            if (i < n)
                off += sidx_sorted_value_len(s, idx[i]);
        }
        HS_TRY(hs_buf_reserve(out, off));
    } else {
        HS_TRY(hs_buf_reserve(out, (size_t)n * (size_t)sidx_value_width(s->vk)));
    }
    for (int64_t i = 0; i < n; i++)
        HS_TRY(sidx_sorted_put_value(s, idx[i], out));
    return HS_OK;
}

void sidx_vals_get(const sidx_vals *v, int64_t i, pr_val *out)
{
    out->kind = v->vk;
    switch (v->vk) {
    case PR_V_I64: out->i = (int64_t)sidx_rd64(v->data + 8 * i); break;
    case PR_V_F64: memcpy(&out->f, v->data + 8 * i, 8); break;
    case PR_V_I128:
        memcpy(&out->d, v->data + 16 * i, 16);
        out->scale = v->scale;
        break;
    default: {
        uint64_t a = sidx_off_get(v->off, i, v->wide), b = sidx_off_get(v->off, i + 1, v->wide);
        out->p = v->data + a;
        out->n = (size_t)(b - a);
        break;
    }
    }
}

hs_status sidx_vals_open(sidx_vals *v, pr_vkind vk, int32_t scale, int64_t n, bool wide,
                         bool strict, const uint8_t *p, size_t len, const char *what,
                         hs_error *err)
{
    memset(v, 0, sizeof *v);
    v->vk = vk;
    v->scale = scale;
    v->n = n;
    v->wide = wide;
    v->width = sidx_value_width(vk);
    if (n < 0)
        return HS_CORRUPT_AT(err, "scalar index: %s: negative count", what);
    if (v->width) {
        if ((uint64_t)n > len / (size_t)v->width || (size_t)n * (size_t)v->width != len)
            return HS_CORRUPT_AT(err, "scalar index: %s: %zu bytes for %lld values of %d bytes",
                                 what, len, (long long)n, v->width);
        v->data = p;
        v->data_n = len;
    } else {
        size_t ow = wide ? 8 : 4;
        if ((uint64_t)n >= len / ow)
            return HS_CORRUPT_AT(err, "scalar index: %s: %zu bytes cannot hold %lld offsets",
                                 what, len, (long long)n + 1);
        v->off = p;
        v->data = p + (size_t)(n + 1) * ow;
        v->data_n = len - (size_t)(n + 1) * ow;
        uint64_t prev = sidx_off_get(p, 0, wide);
        if (prev != 0)
            return HS_CORRUPT_AT(err, "scalar index: %s: first offset %llu, expected 0", what,
                                 (unsigned long long)prev);
        for (int64_t i = 1; i <= n; i++) {
            uint64_t o = sidx_off_get(p, i, wide);
            if (o < prev || o > v->data_n)
                return HS_CORRUPT_AT(err, "scalar index: %s: offset %lld is %llu (previous %llu, "
                                     "area %zu bytes)", what, (long long)i,
                                     (unsigned long long)o, (unsigned long long)prev, v->data_n);
            prev = o;
        }
        if (prev != v->data_n)
            return HS_CORRUPT_AT(err, "scalar index: %s: offsets end at %llu of %zu bytes", what,
                                 (unsigned long long)prev, v->data_n);
    }
    pr_val a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    for (int64_t i = 1; i < n; i++) {
        sidx_vals_get(v, i - 1, &a);
        sidx_vals_get(v, i, &b);
        int c = pr_val_cmp(&a, &b);
        if (c > 0 || (strict && c == 0))
            return HS_CORRUPT_AT(err, "scalar index: %s: values %lld and %lld out of order", what,
                                 (long long)i - 1, (long long)i);
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* probes                                                              */

int sidx_probe_c(const sidx_probe *pr, const pr_val *v)
{
    bool vnan = v->kind == PR_V_F64 && isnan(v->f);
    if (pr->lit_nan)
        return vnan ? 0 : -1;
    if (vnan)
        return 2;
    return pr_val_cmp(v, pr->lit);
}

int64_t sidx_vals_lower(const sidx_vals *v, int64_t lo, int64_t hi, const sidx_probe *pr, int t)
{
    pr_val x;
    memset(&x, 0, sizeof x);
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        sidx_vals_get(v, mid, &x);
        if (sidx_probe_c(pr, &x) >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ------------------------------------------------------------------ */
/* accumulating positions                                              */

/* Files of more rows than this never use a dense bitset (it would take
 * over 16 MiB per lookup): their single positions go to roaring in
 * batches instead. */
#define SIDX_DENSE_MAX_ROWS (1ull << 27)
#define SIDX_FLUSH 65536

static hs_status acc_go_dense(sidx_acc *a, hs_error *err)
{
    size_t words = (size_t)((a->n_rows + 63) / 64);
    a->dense = hs_calloc(words ? words : 1, 8);
    if (!a->dense)
        return hs_err_nomem(err, words * 8);
    size_t n = HS_VEC_LEN(&a->singles, uint32_t);
    const uint32_t *p = (const uint32_t *)a->singles.data;
    for (size_t i = 0; i < n; i++)
        a->dense[p[i] >> 6] |= 1ull << (p[i] & 63);
    hs_buf_free(&a->singles);
    return HS_OK;
}

/* Huge files: moves the buffered positions into a->r. */
static hs_status acc_flush(sidx_acc *a, hs_error *err)
{
    if (!a->r && !(a->r = roaring_bitmap_create()))
        return hs_err_nomem(err, 64);
    roaring_bitmap_add_many(a->r, HS_VEC_LEN(&a->singles, uint32_t),
                            (const uint32_t *)a->singles.data);
    hs_buf_reset(&a->singles);
    return HS_OK;
}

hs_status sidx_acc_add_bitmap(sidx_acc *a, roaring_bitmap_t *bm, hs_error *err)
{
    if (HS_VEC_PUSH(&a->bms, roaring_bitmap_t *, bm) != HS_OK) {
        roaring_bitmap_free(bm);
        return hs_err_nomem(err, sizeof bm);
    }
    return HS_OK;
}

hs_status sidx_acc_add_pos(sidx_acc *a, const uint32_t *pos, size_t n, hs_error *err)
{
    if (a->dense) {
        for (size_t i = 0; i < n; i++)
            a->dense[pos[i] >> 6] |= 1ull << (pos[i] & 63);
        return HS_OK;
    }
    if (hs_buf_append(&a->singles, pos, n * sizeof *pos) != HS_OK)
        return hs_err_nomem(err, n * sizeof *pos);
    size_t have = HS_VEC_LEN(&a->singles, uint32_t);
    if (a->n_rows > SIDX_DENSE_MAX_ROWS)
        return have >= SIDX_FLUSH ? acc_flush(a, err) : HS_OK;
    if (have > a->n_rows / 512 + 256)
        return acc_go_dense(a, err);
    return HS_OK;
}

hs_status sidx_acc_dense_for(sidx_acc *a, uint64_t more, uint64_t **out, hs_error *err)
{
    *out = NULL;
    if (!a->dense) {
        uint64_t have = HS_VEC_LEN(&a->singles, uint32_t);
        if (a->n_rows > SIDX_DENSE_MAX_ROWS || have + more <= a->n_rows / 512 + 256)
            return HS_OK;
        HS_TRY(acc_go_dense(a, err));
    }
    *out = a->dense;
    return HS_OK;
}

void sidx_acc_free(sidx_acc *a)
{
    size_t nb = HS_VEC_LEN(&a->bms, roaring_bitmap_t *);
    for (size_t i = 0; i < nb; i++)
        roaring_bitmap_free(HS_VEC_AT(&a->bms, roaring_bitmap_t *, i));
    hs_buf_free(&a->bms);
    hs_buf_free(&a->singles);
    hs_free(a->dense);
    a->dense = NULL;
    if (a->r)
        roaring_bitmap_free(a->r);
    a->r = NULL;
}

/*
 * Roaring bitmaps built whole containers at a time: the containers are
 * written in Roaring's portable serialization (RoaringFormatSpec, cookie
 * 12346 = no run containers: count, per container key and cardinality - 1,
 * offsets, then each container as an 8 KiB bitset above 4096 values or a
 * sorted uint16 array) and deserialized, which CRoaring does by copying
 * whole containers instead of inserting value by value (roaring_bitmap_
 * add_many was most of a selective lookup's cost).
 *
 * rbp_begin lays the buffer out for containers keys[0..n) of card[j]
 * distinct values each (bitset containers zeroed), rbp_body gives
 * container j's bytes to fill, rbp_finish deserializes and frees.
 */
static uint8_t *rbp_begin(const uint32_t *keys, const uint32_t *card, size_t n, size_t *bytes)
{
    size_t sz = 8 + 8 * n;
    for (size_t j = 0; j < n; j++)
        sz += card[j] > 4096 ? 8192 : (size_t)card[j] * 2;
    uint8_t *buf = hs_malloc(sz);
    if (!buf)
        return NULL;
    uint32_t cookie = 12346, cnt = (uint32_t)n, off = (uint32_t)(8 + 8 * n);
    memcpy(buf, &cookie, 4);
    memcpy(buf + 4, &cnt, 4);
    for (size_t j = 0; j < n; j++) {
        uint16_t key = (uint16_t)keys[j], cm1 = (uint16_t)(card[j] - 1);
        memcpy(buf + 8 + 4 * j, &key, 2);
        memcpy(buf + 10 + 4 * j, &cm1, 2);
        memcpy(buf + 8 + 4 * n + 4 * j, &off, 4);
        if (card[j] > 4096)
            memset(buf + off, 0, 8192);
        off += card[j] > 4096 ? 8192 : card[j] * 2;
    }
    *bytes = sz;
    return buf;
}

static uint8_t *rbp_body(uint8_t *buf, size_t n, size_t j)
{
    uint32_t off;
    memcpy(&off, buf + 8 + 4 * n + 4 * j, 4);
    return buf + off;
}

static roaring_bitmap_t *rbp_finish(uint8_t *buf, size_t bytes)
{
    roaring_bitmap_t *r = roaring_bitmap_portable_deserialize_safe((const char *)buf, bytes);
    hs_free(buf);
    return r;
}

/* The dense bitset w[0..words) as a roaring bitmap; NULL when out of memory. */
static roaring_bitmap_t *dense_to_roaring(const uint64_t *w, size_t words)
{
    size_t n_chunks = (words + 1023) / 1024, n = 0, bytes = 0;
    uint32_t *keys = hs_malloc(n_chunks * sizeof *keys + 1);
    uint32_t *card = hs_malloc(n_chunks * sizeof *card + 1);
    uint8_t *buf = NULL;
    roaring_bitmap_t *r = NULL;
    if (!keys || !card)
        goto done;
    for (size_t c = 0; c < n_chunks; c++) {
        size_t a = c * 1024, b = a + 1024 < words ? a + 1024 : words;
        uint32_t k = 0;
        for (size_t i = a; i < b; i++)
            k += (uint32_t)__builtin_popcountll(w[i]);
        if (k) {
            keys[n] = (uint32_t)c;
            card[n++] = k;
        }
    }
    if (!(buf = rbp_begin(keys, card, n, &bytes)))
        goto done;
    for (size_t j = 0; j < n; j++) {
        uint8_t *body = rbp_body(buf, n, j);
        size_t a = (size_t)keys[j] * 1024, b = a + 1024 < words ? a + 1024 : words;
        if (card[j] > 4096) {
            memcpy(body, w + a, (b - a) * 8);
            continue;
        }
        for (size_t i = a; i < b; i++) {
            for (uint64_t x = w[i]; x; x &= x - 1) {
                uint16_t v = (uint16_t)((i - a) * 64 + (size_t)__builtin_ctzll(x));
                memcpy(body, &v, 2);
                body += 2;
            }
        }
    }
    r = rbp_finish(buf, bytes);
done:
    hs_free(keys);
    hs_free(card);
    return r;
}

roaring_bitmap_t *sidx_roaring_of_sorted(const uint32_t *v, size_t m)
{
    if (m == 0)
        return roaring_bitmap_create();
    /* containers and their distinct values; input out of order falls back
     * to value-by-value inserts */
    size_t n = 0, cap = m < 65536 ? m : 65536, bytes = 0;
    uint32_t *keys = hs_malloc(cap * sizeof *keys), *card = hs_malloc(cap * sizeof *card);
    uint8_t *buf = NULL;
    roaring_bitmap_t *r = NULL;
    if (!keys || !card)
        goto done;
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && v[i] <= v[i - 1]) {
            if (v[i] == v[i - 1])
                continue;
            r = roaring_bitmap_of_ptr(m, v);
            goto done;
        }
        if (n == 0 || keys[n - 1] != v[i] >> 16) {
            keys[n] = v[i] >> 16;
            card[n++] = 0;
        }
        card[n - 1]++;
    }
    if (!(buf = rbp_begin(keys, card, n, &bytes)))
        goto done;
    size_t i = 0;
    for (size_t j = 0; j < n; j++) {
        uint8_t *body = rbp_body(buf, n, j);
        bool bits = card[j] > 4096;
        for (uint32_t k = 0; k < card[j]; i++) {
            if (i > 0 && v[i] == v[i - 1])
                continue;
            uint16_t lo = (uint16_t)(v[i] & 0xffff);
            if (bits)
                body[lo >> 3] |= (uint8_t)(1u << (lo & 7));
            else
                memcpy(body + 2 * (size_t)k, &lo, 2);
            k++;
        }
    }
    r = rbp_finish(buf, bytes);
done:
    hs_free(keys);
    hs_free(card);
    return r;
}

hs_status sidx_acc_finish(sidx_acc *a, roaring_bitmap_t **out, hs_error *err)
{
    *out = NULL;
    size_t nb = HS_VEC_LEN(&a->bms, roaring_bitmap_t *);
    roaring_bitmap_t **bms = (roaring_bitmap_t **)a->bms.data, *r;
    if (nb == 1) {
        r = bms[0];
        a->bms.len = 0;
    } else if (nb > 1) {
        r = roaring_bitmap_or_many(nb, (const roaring_bitmap_t **)bms);
    } else {
        r = roaring_bitmap_create();
    }
    if (!r) {
        sidx_acc_free(a);
        return hs_err_nomem(err, 64);
    }
    if (a->dense) {
        roaring_bitmap_t *d = dense_to_roaring(a->dense, (size_t)((a->n_rows + 63) / 64));
        if (!d) {
            size_t want = (size_t)a->n_rows / 8;
            roaring_bitmap_free(r);
            sidx_acc_free(a);
            return hs_err_nomem(err, want);
        }
        if (roaring_bitmap_is_empty(r)) {
            roaring_bitmap_free(r);
            r = d;
        } else {
            roaring_bitmap_or_inplace(r, d);
            roaring_bitmap_free(d);
        }
    } else if (a->singles.len)
        roaring_bitmap_add_many(r, HS_VEC_LEN(&a->singles, uint32_t),
                                (const uint32_t *)a->singles.data);
    if (a->r)
        roaring_bitmap_or_inplace(r, a->r);
    sidx_acc_free(a);
    *out = r;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* delta-packed position lists                                         */

static int dp_block_bits(const uint32_t *pos, size_t n, size_t b)
{
    size_t i0 = 1 + b * SIDX_DP_BLOCK, i1 = i0 + SIDX_DP_BLOCK < n ? i0 + SIDX_DP_BLOCK : n;
    uint32_t mx = 0;
    for (size_t i = i0; i < i1; i++)
        mx |= pos[i] - pos[i - 1] - 1;
    return sidx_bits_for(mx);
}

size_t sidx_dp_size(const uint32_t *pos, size_t n)
{
    size_t nblk = (n - 1 + SIDX_DP_BLOCK - 1) / SIDX_DP_BLOCK, size = 12 + nblk + 8;
    for (size_t b = 0; b < nblk; b++) {
        size_t cnt = b + 1 < nblk ? SIDX_DP_BLOCK : n - 1 - b * SIDX_DP_BLOCK;
        size += (cnt * (size_t)dp_block_bits(pos, n, b) + 7) / 8;
    }
    return size;
}

hs_status sidx_dp_put(const uint32_t *pos, size_t n, hs_buf *out)
{
    size_t nblk = (n - 1 + SIDX_DP_BLOCK - 1) / SIDX_DP_BLOCK;
    HS_TRY(hs_buf_reserve(out, sidx_dp_size(pos, n)));
    HS_TRY(hs_buf_put_u32le(out, SIDX_DP_TAG));
    HS_TRY(hs_buf_put_u32le(out, (uint32_t)n));
    HS_TRY(hs_buf_put_u32le(out, pos[0]));
    size_t bits_at = out->len;
    HS_TRY(hs_buf_append_zeros(out, nblk));
    uint64_t d[SIDX_DP_BLOCK];
    for (size_t b = 0; b < nblk; b++) {
        size_t i0 = 1 + b * SIDX_DP_BLOCK, cnt = b + 1 < nblk ? SIDX_DP_BLOCK : n - i0;
        int bits = dp_block_bits(pos, n, b);
        out->data[bits_at + b] = (uint8_t)bits;
        for (size_t i = 0; i < cnt; i++)
            d[i] = pos[i0 + i] - pos[i0 + i - 1] - 1;
        size_t at = out->len, sz = (cnt * (size_t)bits + 7) / 8;
        HS_TRY(hs_buf_append_zeros(out, sz + 8)); /* + slack for sidx_pack's 9-byte writes */
        sidx_pack(out->data + at, d, cnt, bits);
        out->len -= 8;
    }
    return hs_buf_append_zeros(out, 8);
}

hs_status sidx_dp_decode(const uint8_t *p, size_t len, uint64_t limit, uint32_t **out, size_t *n,
                         hs_error *err)
{
    *out = NULL;
    *n = 0;
    if (!sidx_is_dp(p, len))
        return HS_CORRUPT_AT(err, "scalar index: delta-packed list of %zu bytes: bad header", len);
    uint64_t cnt = sidx_rd32(p + 4), cur = sidx_rd32(p + 8);
    if (cnt < 2 || cnt > limit || cur >= limit)
        return HS_CORRUPT_AT(err, "scalar index: delta-packed list of %llu rows starting at %llu "
                             "(limit %llu)", (unsigned long long)cnt, (unsigned long long)cur,
                             (unsigned long long)limit);
    size_t nblk = (size_t)((cnt - 1 + SIDX_DP_BLOCK - 1) / SIDX_DP_BLOCK), at = 12 + nblk;
    if (len < at + 8)
        return HS_CORRUPT_AT(err, "scalar index: delta-packed list: %zu bytes for %zu blocks", len,
                             nblk);
    /* blocks of width 0 take no bytes: a list of cnt rows may be cnt / 128
     * bytes long, so its 4 * cnt bytes are charged to the decode limit */
    hs_decode_budget budget;
    hs_decode_budget_init(&budget, len);
    HS_TRY(HS_DECODE_CHARGE(&budget, cnt * 4, err, "scalar index: delta-packed list"));
    uint32_t *v = hs_malloc((size_t)cnt * 4);
    if (!v)
        return hs_err_nomem(err, (size_t)cnt * 4);
    v[0] = (uint32_t)cur;
    size_t k = 1;
    for (size_t b = 0; b < nblk; b++) {
        int bits = p[12 + b];
        size_t m = b + 1 < nblk ? SIDX_DP_BLOCK : (size_t)cnt - 1 - b * SIDX_DP_BLOCK;
        size_t sz = (m * (size_t)(bits > 32 ? 0 : bits) + 7) / 8;
        if (bits > 32 || sz > len - 8 - at) {
            hs_free(v);
            return HS_CORRUPT_AT(err, "scalar index: delta-packed list: block %zu (%d bits) does "
                                 "not fit", b, bits);
        }
        for (size_t i = 0; i < m; i++) {
            cur += 1 + sidx_unpack1(p + at, i, bits);
            if (cur >= limit) {
                hs_free(v);
                return HS_CORRUPT_AT(err, "scalar index: delta-packed list reaches row %llu of "
                                     "%llu", (unsigned long long)cur, (unsigned long long)limit);
            }
            v[k++] = (uint32_t)cur;
        }
        at += sz;
    }
    if (at + 8 != len) {
        hs_free(v);
        return HS_CORRUPT_AT(err, "scalar index: delta-packed list: %zu bytes, %zu used", len,
                             at + 8);
    }
    *out = v;
    *n = (size_t)cnt;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* portable roaring bitmaps                                            */

#define RB_COOKIE_RUN 12347
#define RB_COOKIE_NORUN 12346

/* Header of a portable bitmap: container count, run flags, descriptive
 * header (key, card - 1), and where the containers start. */
typedef struct rb_hdr {
    size_t size;
    const uint8_t *runs;
    const uint8_t *desc;
    size_t at;
} rb_hdr;

static bool rb_parse_hdr(const uint8_t *p, size_t n, rb_hdr *h)
{
    if (n < 4)
        return false;
    uint32_t cookie = sidx_rd32(p);
    h->runs = NULL;
    if ((cookie & 0xFFFF) == RB_COOKIE_RUN) {
        h->size = (cookie >> 16) + 1;
        h->runs = p + 4;
        h->at = 4 + (h->size + 7) / 8;
    } else if (cookie == RB_COOKIE_NORUN) {
        if (n < 8)
            return false;
        h->size = sidx_rd32(p + 4);
        h->at = 8;
        if (h->size > 65536)
            return false;
    } else {
        return false;
    }
    if (h->at > n || (n - h->at) / 4 < h->size)
        return false;
    h->desc = p + h->at;
    h->at += 4 * h->size;
    if (!h->runs || h->size >= 4) { /* offsets, which the deserializer skips */
        if ((n - h->at) / 4 < h->size)
            return false;
        h->at += 4 * h->size;
    }
    return true;
}

uint64_t sidx_rb_header_card(const uint8_t *p, size_t n)
{
    rb_hdr h;
    if (!rb_parse_hdr(p, n, &h))
        return 0;
    uint64_t card = 0;
    for (size_t k = 0; k < h.size; k++)
        card += (uint64_t)sidx_rd16(h.desc + 4 * k + 2) + 1;
    return card;
}

static hs_status rb_check(const uint8_t *p, size_t n, uint64_t limit, uint64_t *card_out,
                          hs_error *err)
{
    rb_hdr h;
    if (!rb_parse_hdr(p, n, &h))
        return HS_CORRUPT_AT(err, "scalar index: roaring bitmap of %zu bytes: bad header", n);
    size_t at = h.at;
    uint64_t total = 0;
    int64_t prev_key = -1;
    for (size_t k = 0; k < h.size; k++) {
        uint32_t key = sidx_rd16(h.desc + 4 * k), card = (uint32_t)sidx_rd16(h.desc + 4 * k + 2) + 1;
        uint32_t hi;
        if ((int64_t)key <= prev_key)
            return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: container keys out of order");
        prev_key = key;
        if (h.runs && ((h.runs[k >> 3] >> (k & 7)) & 1)) {
            if (n - at < 2)
                return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: run container truncated");
            uint32_t nr = sidx_rd16(p + at), sum = 0;
            int32_t prev_end = -1;
            at += 2;
            if (nr == 0 || (n - at) / 4 < nr)
                return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: run container of %u runs "
                                     "does not fit", nr);
            for (uint32_t r = 0; r < nr; r++) {
                int32_t start = sidx_rd16(p + at + 4 * r), len = sidx_rd16(p + at + 4 * r + 2);
                if (start <= prev_end || start + len > 65535)
                    return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: bad run %u", r);
                prev_end = start + len;
                sum += (uint32_t)len + 1;
            }
            if (sum != card)
                return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: run container holds %u "
                                     "values, header says %u", sum, card);
            hi = (uint32_t)prev_end;
            at += 4 * (size_t)nr;
        } else if (card <= 4096) {
            if ((n - at) / 2 < card)
                return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: array container truncated");
            int32_t prev = -1;
            for (uint32_t i = 0; i < card; i++) {
                int32_t v = sidx_rd16(p + at + 2 * i);
                if (v <= prev)
                    return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: array container not "
                                         "strictly increasing");
                prev = v;
            }
            hi = (uint32_t)prev;
            at += 2 * (size_t)card;
        } else {
            if (n - at < 8192)
                return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: bitset container "
                                     "truncated");
            uint32_t pop = 0;
            hi = 0;
            for (int w = 0; w < 1024; w++) {
                uint64_t x = sidx_rd64(p + at + 8 * (size_t)w);
                pop += (uint32_t)__builtin_popcountll(x);
                if (x)
                    hi = (uint32_t)(64 * w + 63 - __builtin_clzll(x));
            }
            if (pop != card)
                return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: bitset holds %u values, "
                                     "header says %u", pop, card);
            at += 8192;
        }
        if ((((uint64_t)key << 16) | hi) >= limit)
            return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: position %llu is past the "
                                 "%llu rows", (unsigned long long)(((uint64_t)key << 16) | hi),
                                 (unsigned long long)limit);
        total += card;
    }
    if (at != n)
        return HS_CORRUPT_AT(err, "scalar index: roaring bitmap: %zu bytes, %zu used", n, at);
    if (card_out)
        *card_out = total;
    return HS_OK;
}

hs_status sidx_rb_load(const uint8_t *p, size_t n, uint64_t limit, roaring_bitmap_t **out,
                       uint64_t *card, hs_error *err)
{
    HS_TRY(rb_check(p, n, limit, card, err));
    roaring_bitmap_t *bm = roaring_bitmap_portable_deserialize_safe((const char *)p, n);
    if (!bm)
        return HS_CORRUPT_AT(err, "scalar index: roaring bitmap of %zu bytes does not deserialize",
                             n);
    *out = bm;
    return HS_OK;
}

hs_status sidx_rb_put(roaring_bitmap_t *bm, hs_buf *out)
{
    roaring_bitmap_run_optimize(bm);
    size_t sz = roaring_bitmap_portable_size_in_bytes(bm);
    HS_TRY(hs_buf_reserve(out, sz));
    size_t wrote = roaring_bitmap_portable_serialize(bm, (char *)out->data + out->len);
    if (wrote != sz)
        return HS_INTERNAL;
    out->len += sz;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* bit packing                                                         */

void sidx_unpack(const uint8_t *p, size_t n, int bits, uint64_t *out)
{
    if (!bits) {
        memset(out, 0, n * sizeof *out);
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = sidx_unpack1(p, i, bits);
}

void sidx_pack(uint8_t *dst, const uint64_t *v, size_t n, int bits)
{
    /* an LSB-first bit stream, written a little-endian word at a time */
    uint64_t acc = 0;
    int fill = 0;
    size_t o = 0;
    if (!bits)
        return;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        acc |= x << fill;
        if (fill + bits >= 64) {
            sidx_wr64(dst + o, acc);
            o += 8;
            acc = fill ? x >> (64 - fill) : 0;
            fill = fill + bits - 64;
        } else {
            fill += bits;
        }
    }
    for (int k = 0; k < (fill + 7) / 8; k++)
        dst[o + (size_t)k] = (uint8_t)(acc >> (8 * k));
}

/* ------------------------------------------------------------------ */
/* builder                                                             */

struct sidx_builder {
    sidx_kind kind;
    hs_type type;
    pr_vkind vk;
    int32_t scale;
    int32_t field_id;
    int64_t data_file_size;
    int64_t n_rows;            /* positions added so far */
    bool finished;
    hs_buf nulls;              /* uint32 positions of null rows */
    hs_buf pos;                /* uint32 positions of non-null rows */
    hs_buf keys;               /* I64/F64: uint64 order keys, parallel to pos */
    hs_buf ids;                /* I128/BYTES: uint32 dictionary ids, parallel to pos */
    hs_map dict;               /* I128/BYTES: value bytes -> id */
    int64_t n_dict;
    int64_t dict_max;          /* SIDX_DICT_MAX unless a test lowered it */
    bool rows_mode;            /* I128/BYTES, mostly distinct: no dictionary, */
    hs_buf blob;               /* the values of the non-null rows back to back, */
    hs_buf offs;               /* and their uint64 end offsets in blob */
};

/* A dictionary that grows past this many values, more than a quarter of
 * the rows so far, is dropped: hashing mostly-distinct values costs more
 * than it saves, so the rows are kept as they are and sorted directly. */
#define SIDX_DICT_MAX 65536

hs_status sidx_builder_new(sidx_kind kind, const hs_field *f, int64_t data_file_size,
                           sidx_builder **out, hs_error *err)
{
    *out = NULL;
    if (kind != SIDX_AUTO && kind != SIDX_INVERTED && kind != SIDX_RANGE)
        return hs_err_set(err, HS_INVALID, "scalar index: unknown kind %d", (int)kind);
    if (!sidx_supports(f))
        return hs_err_set(err, HS_UNSUPPORTED, "scalar index: column \"%s\" of type %s cannot be "
                          "indexed", f && f->name ? f->name : "?",
                          f ? hs_type_name(f->type) : "?");
    sidx_builder *b = hs_calloc(1, sizeof *b);
    if (!b)
        return hs_err_nomem(err, sizeof *b);
    b->kind = kind;
    b->type = f->type;
    b->vk = pr_kind_of(f);
    b->scale = b->vk == PR_V_I128 ? f->scale : 0;
    b->field_id = f->field_id;
    b->data_file_size = data_file_size;
    b->dict_max = SIDX_DICT_MAX;
    *out = b;
    return HS_OK;
}

void sidx_builder_set_dict_limit(sidx_builder *b, int64_t max_distinct)
{
    b->dict_max = max_distinct < 0 ? 0 : max_distinct;
}

static void buf_exact(hs_buf *x, size_t cap)
{
    if (x->cap)
        return;
    uint8_t *d = hs_malloc(cap);
    if (d) {
        x->data = d;
        x->cap = cap;
    }
}

void sidx_builder_expect_rows(sidx_builder *b, int64_t n_rows)
{
    if (!b || b->n_rows > 0 || n_rows <= 0 || n_rows > SIDX_MAX_ROWS ||
        (b->vk != PR_V_I64 && b->vk != PR_V_F64))
        return;
    /* + 1: hs_buf_reserve grows when the need reaches the capacity */
    buf_exact(&b->pos, (size_t)n_rows * 4 + 1);
    buf_exact(&b->keys, (size_t)n_rows * 8 + 1);
}

void sidx_builder_free(sidx_builder *b)
{
    if (!b)
        return;
    hs_buf_free(&b->nulls);
    hs_buf_free(&b->pos);
    hs_buf_free(&b->keys);
    hs_buf_free(&b->ids);
    hs_map_free(&b->dict);
    hs_buf_free(&b->blob);
    hs_buf_free(&b->offs);
    hs_free(b);
}

/* Leaves dictionary mode: the rows so far go to blob/offs, the map and ids
 * are freed. */
static hs_status to_rows_mode(sidx_builder *b, hs_error *err)
{
    size_t nd = (size_t)b->n_dict, n = b->ids.len / 4;
    const uint8_t **dp = hs_malloc((nd ? nd : 1) * sizeof *dp);
    uint32_t *dn = hs_malloc((nd ? nd : 1) * 4);
    hs_status st = dp && dn ? HS_OK : HS_NOMEM;
    for (size_t i = 0; st == HS_OK && i < b->dict.cap; i++) {
        const hs_map_slot *sl = &b->dict.slots[i];
        if (sl->key && sl->value < nd) {
            dp[sl->value] = sl->key;
            dn[sl->value] = sl->key_len;
        }
    }
    if (st == HS_OK)
        st = hs_buf_reserve(&b->offs, (n + 1) * 8);
    if (st == HS_OK)
        st = hs_buf_put_u64le(&b->offs, 0);
    const uint32_t *ids = (const uint32_t *)b->ids.data;
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        st = hs_buf_append(&b->blob, dp[ids[i]], dn[ids[i]]);
        if (st == HS_OK)
            st = hs_buf_put_u64le(&b->offs, b->blob.len);
    }
    hs_free(dp);
    hs_free(dn);
    if (st != HS_OK)
        return hs_err_nomem(err, b->blob.len);
    hs_map_free(&b->dict);
    hs_buf_free(&b->ids);
    b->n_dict = 0;
    b->rows_mode = true;
    return HS_OK;
}

static hs_status add_dict(sidx_builder *b, const uint8_t *p, size_t n, uint32_t *id_out,
                          hs_error *err)
{
    if (b->rows_mode) {
        if (hs_buf_append(&b->blob, p, n) != HS_OK || hs_buf_put_u64le(&b->offs, b->blob.len))
            return hs_err_nomem(err, n);
        return HS_OK;
    }
    uint64_t id;
    bool found;
    if (hs_map_get_or_put(&b->dict, p, n, (uint64_t)b->n_dict, &id, &found) != HS_OK)
        return hs_err_nomem(err, n + 32);
    *id_out = (uint32_t)id;
    if (!found && ++b->n_dict > b->dict_max && b->n_dict > (int64_t)(b->pos.len / 4) / 4)
        return to_rows_mode(b, err); /* the caller still records this row's id */
    return HS_OK;
}

/* Numeric rows: one loop per physical type, writing straight into the
 * reserved arrays. */
#define SIDX_ADD_NUM(T, KEY)                                                  \
    do {                                                                      \
        const T *v_ = (const T *)c->values.data;                              \
        for (int64_t i = 0; i < n; i++) {                                     \
            if (vb && !hs_bit_get(vb, i)) {                                   \
                nulls[nn++] = p0 + (uint32_t)i;                               \
                continue;                                                     \
            }                                                                 \
            keys[k] = KEY(v_[i]);                                             \
            pos[k++] = p0 + (uint32_t)i;                                      \
        }                                                                     \
    } while (0)
#define SIDX_KI(x) sidx_i64_key((int64_t)(x))
#define SIDX_KF(x) sidx_f64_key((double)(x))
#define SIDX_KH(x) sidx_f64_key((double)hs_half_to_float(x))

static void add_numeric(sidx_builder *b, const hs_column *c, int64_t n, uint32_t p0, size_t *kk,
                        size_t *nnn)
{
    const uint8_t *vb = c->validity.data;
    uint32_t *pos = (uint32_t *)(b->pos.data + b->pos.len);
    uint64_t *keys = (uint64_t *)(b->keys.data + b->keys.len);
    uint32_t *nulls = (uint32_t *)(b->nulls.data + b->nulls.len);
    size_t k = 0, nn = 0;
    switch (c->type) {
    case HS_TYPE_BOOL:
        for (int64_t i = 0; i < n; i++) {
            if (vb && !hs_bit_get(vb, i)) {
                nulls[nn++] = p0 + (uint32_t)i;
                continue;
            }
            keys[k] = sidx_i64_key(hs_bit_get(c->values.data, i));
            pos[k++] = p0 + (uint32_t)i;
        }
        break;
    case HS_TYPE_INT8: SIDX_ADD_NUM(int8_t, SIDX_KI); break;
    case HS_TYPE_INT16: SIDX_ADD_NUM(int16_t, SIDX_KI); break;
    case HS_TYPE_INT32: case HS_TYPE_DATE32: case HS_TYPE_TIME32:
        SIDX_ADD_NUM(int32_t, SIDX_KI); break;
    case HS_TYPE_UINT8: SIDX_ADD_NUM(uint8_t, SIDX_KI); break;
    case HS_TYPE_UINT16: SIDX_ADD_NUM(uint16_t, SIDX_KI); break;
    case HS_TYPE_UINT32: SIDX_ADD_NUM(uint32_t, SIDX_KI); break;
    case HS_TYPE_FLOAT16: SIDX_ADD_NUM(uint16_t, SIDX_KH); break;
    case HS_TYPE_FLOAT32: SIDX_ADD_NUM(float, SIDX_KF); break;
    case HS_TYPE_FLOAT64: SIDX_ADD_NUM(double, SIDX_KF); break;
    default: /* INT64, UINT64 (read as int64, as pr_val_get does), TIME64, TIMESTAMP */
        SIDX_ADD_NUM(int64_t, SIDX_KI); break;
    }
    *kk = k;
    *nnn = nn;
}

hs_status sidx_builder_add(sidx_builder *b, const hs_column *c, int64_t first_pos, hs_error *err)
{
    if (!b || !c)
        return hs_err_set(err, HS_INVALID, "scalar index: no builder or column");
    if (b->finished)
        return hs_err_set(err, HS_INVALID, "scalar index: rows added after finish or a failed add");
    if (c->type != b->type)
        return hs_err_set(err, HS_INVALID, "scalar index: column of type %s added to a builder "
                          "for %s", hs_type_name(c->type), hs_type_name(b->type));
    if (first_pos != b->n_rows)
        return hs_err_set(err, HS_INVALID, "scalar index: batch starts at position %lld, "
                          "expected %lld", (long long)first_pos, (long long)b->n_rows);
    int64_t n = c->length;
    if (n < 0 || n > SIDX_MAX_ROWS - b->n_rows)
        return hs_err_set(err, HS_UNSUPPORTED, "scalar index: a data file of more than %lld rows",
                          (long long)SIDX_MAX_ROWS);
    if (n == 0)
        return HS_OK;
    uint32_t p0 = (uint32_t)first_pos;
    size_t un = (size_t)n;
    if (hs_buf_reserve(&b->pos, un * 4) != HS_OK || hs_buf_reserve(&b->nulls, un * 4) != HS_OK)
        return hs_err_nomem(err, un * 8);
    if (b->vk == PR_V_I64 || b->vk == PR_V_F64) {
        if (hs_buf_reserve(&b->keys, un * 8) != HS_OK)
            return hs_err_nomem(err, un * 8);
        size_t k, nn;
        add_numeric(b, c, n, p0, &k, &nn);
        b->pos.len += k * 4;
        b->keys.len += k * 8;
        b->nulls.len += nn * 4;
        b->n_rows += n;
        return HS_OK;
    }
    static const uint8_t no_bytes[1];
    const uint8_t *vb = c->validity.data, *d = c->values.data ? c->values.data : no_bytes;
    const int32_t *o = HS_COL_OFFSETS(c);
    size_t bytes = c->type == HS_TYPE_DECIMAL128 ? 16 * un
                 : c->type == HS_TYPE_FIXED_BINARY ? (size_t)c->width * un : (size_t)(o[n] - o[0]);
    if (b->rows_mode ? hs_buf_reserve(&b->offs, un * 8) != HS_OK ||
                       hs_buf_reserve(&b->blob, bytes) != HS_OK
                     : hs_buf_reserve(&b->ids, un * 4) != HS_OK)
        return hs_err_nomem(err, un * 8 + bytes);
    for (int64_t i = 0; i < n; i++) {
        uint32_t p = p0 + (uint32_t)i, id = 0;
        if (vb && !hs_bit_get(vb, i)) {
            HS_VEC_AT(&b->nulls, uint32_t, b->nulls.len / 4) = p;
            b->nulls.len += 4;
            continue;
        }
        const uint8_t *vp;
        size_t vn;
        if (c->type == HS_TYPE_DECIMAL128) {
            vp = d + 16 * i;
            vn = 16;
        } else if (c->type == HS_TYPE_FIXED_BINARY) {
            vp = d + (size_t)c->width * (size_t)i;
            vn = (size_t)c->width;
        } else {
            vp = d + o[i];
            vn = (size_t)(o[i + 1] - o[i]);
        }
        bool was_rows = b->rows_mode;
        hs_status st = add_dict(b, vp, vn, &id, err);
        if (st == HS_OK && !was_rows && b->rows_mode) /* switched: this row goes to blob */
            st = add_dict(b, vp, vn, &id, err);
        if (st != HS_OK) {
            b->n_rows += i; /* keep the arrays consistent; the builder is unusable anyway */
            b->finished = true;
            return st;
        }
        HS_VEC_AT(&b->pos, uint32_t, b->pos.len / 4) = p;
        b->pos.len += 4;
        if (!b->rows_mode) {
            HS_VEC_AT(&b->ids, uint32_t, b->ids.len / 4) = id;
            b->ids.len += 4;
        }
    }
    b->n_rows += n;
    return HS_OK;
}

/*
 * Sorting (key, position) pairs by key, stably.  One out-of-cache pass
 * scatters by the top 8 bits of the keys' varying range (MSD), so that
 * each bucket fits in cache; a bucket is then sorted by LSD radix passes
 * over the bytes that vary inside it (or by insertion when tiny), and
 * recursively by MSD when it is still large.  Stable at every step, so
 * equal keys keep ascending positions.
 */
#define SORT_SMALL 32
#define SORT_CACHE 16384

static void insertion_sort(uint64_t *k, uint32_t *p, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t x = k[i];
        uint32_t y = p[i];
        size_t j = i;
        while (j > 0 && k[j - 1] > x) {
            k[j] = k[j - 1];
            p[j] = p[j - 1];
            j--;
        }
        k[j] = x;
        p[j] = y;
    }
}

/* LSD passes over the bytes below bit `top` (inclusive) that vary. */
static void lsd_sort(uint64_t *k, uint32_t *p, uint64_t *tk, uint32_t *tp, size_t n, int top,
                     uint64_t vary)
{
    uint64_t *sk = k, *dk = tk;
    uint32_t *sp = p, *dp = tp;
    size_t cnt[256];
    for (int sh = 0; sh <= top; sh += 8) {
        if (!((vary >> sh) & 0xFF))
            continue;
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < n; i++)
            cnt[(sk[i] >> sh) & 0xFF]++;
        size_t sum = 0;
        for (int v = 0; v < 256; v++) {
            size_t t = cnt[v];
            cnt[v] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++) {
            size_t at = cnt[(sk[i] >> sh) & 0xFF]++;
            dk[at] = sk[i];
            dp[at] = sp[i];
        }
        uint64_t *xk = sk; sk = dk; dk = xk;
        uint32_t *xp = sp; sp = dp; dp = xp;
    }
    if (sk != k) {
        memcpy(k, sk, n * 8);
        memcpy(p, sp, n * 4);
    }
}

/* Sorts k/p in place (tk/tp: scratch of n). */
static void key_sort(uint64_t *k, uint32_t *p, uint64_t *tk, uint32_t *tp, size_t n)
{
    if (n <= SORT_SMALL) {
        insertion_sort(k, p, n);
        return;
    }
    uint64_t vary = 0; /* the bits in which some key differs from the first */
    for (size_t i = 1; i < n; i++)
        vary |= k[i] ^ k[0];
    if (!vary)
        return;
    int top = 63 - __builtin_clzll(vary);
    if (n <= SORT_CACHE) {
        lsd_sort(k, p, tk, tp, n, top, vary);
        return;
    }
    int sh = top >= 7 ? top - 7 : 0;
    size_t start[257];
    memset(start, 0, sizeof start);
    for (size_t i = 0; i < n; i++)
        start[((k[i] >> sh) & 0xFF) + 1]++;
    for (int v = 0; v < 256; v++)
        start[v + 1] += start[v];
    size_t at[256];
    memcpy(at, start, sizeof at);
    for (size_t i = 0; i < n; i++) {
        size_t j = at[(k[i] >> sh) & 0xFF]++;
        tk[j] = k[i];
        tp[j] = p[i];
    }
    for (int v = 0; v < 256; v++) {
        size_t s0 = start[v], m = start[v + 1] - s0;
        if (!m)
            continue;
        key_sort(tk + s0, tp + s0, k + s0, p + s0, m);
        memcpy(k + s0, tk + s0, m * 8);
        memcpy(p + s0, tp + s0, m * 4);
    }
}

typedef struct dict_ent {
    const uint8_t *p;
    uint32_t n;
    uint32_t id;
} dict_ent;

static int cmp_ent_bytes(const void *a, const void *b)
{
    const dict_ent *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* Big-endian 8 bytes of p[0..n) from off, zero-padded: comparing these
 * chunks as integers compares the bytes. */
static uint64_t chunk_be(const uint8_t *p, size_t n, size_t off)
{
    if (off + 8 <= n)
        return __builtin_bswap64(sidx_rd64(p + off));
    uint64_t v = 0;
    for (size_t i = off; i < n; i++) /* fewer than 8 left */
        v |= (uint64_t)p[i] << (56 - 8 * (i - off));
    return v;
}

static void ent_insertion_sort(const dict_ent *e, uint32_t *ord, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint32_t x = ord[i];
        size_t j = i;
        while (j > 0 && cmp_ent_bytes(&e[ord[j - 1]], &e[x]) > 0) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = x;
    }
}

/*
 * Sorts the distinct byte strings e[ord[0..n)] (MSD radix by 8-byte chunks:
 * key_sort on chunk `depth`, then each run of equal chunks by the next
 * chunk; a run whose strings all end within the chunk differs only in
 * length, which orders it).  Recursion goes into the smaller runs and
 * loops on the largest, so the stack stays O(log n) deep whatever the
 * strings.  keys/tk/tp: scratch of n.
 */
static void bytes_sort(const dict_ent *e, uint32_t *ord, size_t n, size_t depth, uint64_t *keys,
                       uint64_t *tk, uint32_t *tp)
{
    while (n > 1) {
        if (n <= 16) {
            ent_insertion_sort(e, ord, n);
            return;
        }
        size_t off = 8 * depth;
        for (size_t i = 0; i < n; i++)
            keys[i] = chunk_be(e[ord[i]].p, e[ord[i]].n, off);
        key_sort(keys, ord, tk, tp, n);
        size_t big_a = 0, big_n = 0;
        for (size_t a = 0; a < n;) {
            size_t b = a + 1;
            bool longer = e[ord[a]].n > off + 8;
            while (b < n && keys[b] == keys[a]) {
                longer |= e[ord[b]].n > off + 8;
                b++;
            }
            if (b - a > 1 && !longer) { /* equal but for trailing zeros: by length */
                for (size_t i = a; i < b; i++)
                    keys[i] = e[ord[i]].n;
                key_sort(keys + a, ord + a, tk, tp, b - a);
            } else if (b - a > big_n) {
                if (big_n > 1)
                    bytes_sort(e, ord + big_a, big_n, depth + 1, keys + big_a, tk, tp);
                big_a = a;
                big_n = b - a;
            } else if (b - a > 1) {
                bytes_sort(e, ord + a, b - a, depth + 1, keys + a, tk, tp);
            }
            a = b;
        }
        ord += big_a;
        keys += big_a;
        n = big_n;
        depth++;
    }
}

/* Scratch of the sort; everything freed by sort_free. */
typedef struct sort_mem {
    uint64_t *tk;
    uint32_t *tp;
    uint32_t *spos, *srank, *rank_of, *dict_n;
    const uint8_t **dict_p;
    dict_ent *ents;            /* by id */
    uint32_t *ord;             /* ids in value order */
    size_t *start;
} sort_mem;

static void sort_free(sort_mem *m)
{
    hs_free(m->tk);
    hs_free(m->tp);
    hs_free(m->spos);
    hs_free(m->srank);
    hs_free(m->rank_of);
    hs_free(m->dict_n);
    hs_free(m->dict_p);
    hs_free(m->ents);
    hs_free(m->ord);
    hs_free(m->start);
    memset(m, 0, sizeof *m);
}

/* Fills m->ord with the dictionary ids 0..nd-1 in value order. */
static hs_status dict_sort(pr_vkind vk, sort_mem *m, size_t nd, hs_error *err)
{
    m->ord = hs_malloc((nd ? nd : 1) * 4);
    uint64_t *keys = hs_malloc((nd ? nd : 1) * 8);
    m->tk = hs_malloc((nd ? nd : 1) * 8);
    m->tp = hs_malloc((nd ? nd : 1) * 4);
    if (!m->ord || !keys || !m->tk || !m->tp) {
        hs_free(keys);
        return hs_err_nomem(err, nd * 24);
    }
    for (size_t i = 0; i < nd; i++)
        m->ord[i] = (uint32_t)i;
    if (vk == PR_V_I128) { /* stable LSD: low half unsigned, then high half signed */
        for (int half = 0; half < 2; half++) {
            for (size_t i = 0; i < nd; i++) {
                uint64_t w = sidx_rd64(m->ents[m->ord[i]].p + 8 * half);
                keys[i] = half ? w ^ (1ull << 63) : w;
            }
            key_sort(keys, m->ord, m->tk, m->tp, nd);
        }
    } else {
        bytes_sort(m->ents, m->ord, nd, 0, keys, m->tk, m->tp);
    }
    hs_free(keys);
    hs_free(m->tk);
    hs_free(m->tp);
    m->tk = NULL;
    m->tp = NULL;
    return HS_OK;
}

/* Rows mode: sorts the rows' values themselves (stably, so equal values
 * keep ascending positions), then numbers the distinct values. */
static hs_status sort_rows_direct(sidx_builder *b, sidx_sorted *s, sort_mem *m, hs_error *err)
{
    size_t n = b->pos.len / 4;
    const uint64_t *off = (const uint64_t *)b->offs.data;
    m->ents = hs_malloc((n ? n : 1) * sizeof *m->ents);
    m->dict_p = hs_malloc((n ? n : 1) * sizeof *m->dict_p);
    m->dict_n = hs_malloc((n ? n : 1) * 4);
    m->spos = hs_malloc((n ? n : 1) * 4);
    m->srank = hs_malloc((n ? n : 1) * 4);
    if (!m->ents || !m->dict_p || !m->dict_n || !m->spos || !m->srank)
        return hs_err_nomem(err, n * 32);
    for (size_t i = 0; i < n; i++)
        m->ents[i] = (dict_ent){b->blob.data + off[i], (uint32_t)(off[i + 1] - off[i]), (uint32_t)i};
    HS_TRY(dict_sort(b->vk, m, n, err));
    const uint32_t *pos = (const uint32_t *)b->pos.data;
    int64_t r = -1;
    for (size_t j = 0; j < n; j++) {
        const dict_ent *x = &m->ents[m->ord[j]];
        if (r < 0 || x->n != m->dict_n[r] || (x->n && memcmp(x->p, m->dict_p[r], x->n) != 0)) {
            r++;
            m->dict_p[r] = x->p;
            m->dict_n[r] = x->n;
        }
        m->spos[j] = pos[x->id];
        m->srank[j] = (uint32_t)r;
    }
    s->pos = m->spos;
    s->rank = m->srank;
    s->dict_p = m->dict_p;
    s->dict_n = m->dict_n;
    s->n_distinct = r + 1;
    return HS_OK;
}

/* Sorts the collected rows into s (arrays in b or m). */
static hs_status sort_rows(sidx_builder *b, sidx_sorted *s, sort_mem *m, hs_error *err)
{
    size_t n = b->pos.len / 4;
    memset(s, 0, sizeof *s);
    s->vk = b->vk;
    s->scale = b->scale;
    s->n = (int64_t)n;
    if (b->vk == PR_V_I64 || b->vk == PR_V_F64) {
        uint64_t *keys = (uint64_t *)b->keys.data;
        uint32_t *pos = (uint32_t *)b->pos.data;
        s->keys = keys;
        s->pos = pos;
        if (n > 1) {
            m->tk = hs_malloc(n * 8);
            m->tp = hs_malloc(n * 4);
            if (!m->tk || !m->tp)
                return hs_err_nomem(err, n * 12);
            key_sort(keys, pos, m->tk, m->tp, n);
            hs_free(m->tk);
            hs_free(m->tp);
            m->tk = NULL;
            m->tp = NULL;
        }
        int64_t nd = n ? 1 : 0;
        for (size_t i = 1; i < n; i++)
            nd += keys[i] != keys[i - 1];
        s->n_distinct = nd;
        return HS_OK;
    }
    if (b->rows_mode)
        return sort_rows_direct(b, s, m, err);
    /* dictionary kinds */
    size_t nd = (size_t)b->n_dict;
    m->ents = hs_malloc((nd ? nd : 1) * sizeof *m->ents);
    m->rank_of = hs_malloc((nd ? nd : 1) * 4);
    m->dict_p = hs_malloc((nd ? nd : 1) * sizeof *m->dict_p);
    m->dict_n = hs_malloc((nd ? nd : 1) * 4);
    m->start = hs_calloc(nd + 1, sizeof *m->start);
    m->spos = hs_malloc((n ? n : 1) * 4);
    m->srank = hs_malloc((n ? n : 1) * 4);
    if (!m->ents || !m->rank_of || !m->dict_p || !m->dict_n || !m->start || !m->spos || !m->srank)
        return hs_err_nomem(err, nd * 32 + n * 8);
    for (size_t i = 0; i < b->dict.cap; i++) {
        const hs_map_slot *sl = &b->dict.slots[i];
        if (sl->key && sl->value < nd)
            m->ents[sl->value] = (dict_ent){sl->key, sl->key_len, (uint32_t)sl->value};
    }
    HS_TRY(dict_sort(b->vk, m, nd, err));
    for (size_t r = 0; r < nd; r++) {
        const dict_ent *x = &m->ents[m->ord[r]];
        m->rank_of[x->id] = (uint32_t)r;
        m->dict_p[r] = x->p;
        m->dict_n[r] = x->n;
    }
    const uint32_t *ids = (const uint32_t *)b->ids.data, *pos = (const uint32_t *)b->pos.data;
    for (size_t i = 0; i < n; i++)
        m->start[m->rank_of[ids[i]] + 1]++;
    for (size_t r = 0; r < nd; r++)
        m->start[r + 1] += m->start[r];
    for (size_t i = 0; i < n; i++) {
        uint32_t r = m->rank_of[ids[i]];
        size_t at = m->start[r]++;
        m->spos[at] = pos[i];
        m->srank[at] = r;
    }
    s->pos = m->spos;
    s->rank = m->srank;
    s->dict_p = m->dict_p;
    s->dict_n = m->dict_n;
    s->n_distinct = (int64_t)nd;
    return HS_OK;
}

static hs_status write_index(sidx_builder *b, const sidx_sorted *s, sidx_kind kind, hs_buf *out,
                             size_t start, hs_error *err)
{
    uint64_t sec[SIDX_N_SECTIONS][2];
    uint32_t flags = 0;
    memset(sec, 0, sizeof sec);
    int64_t n_nulls = (int64_t)(b->nulls.len / 4);
    if (hs_buf_append_zeros(out, SIDX_HEADER_SIZE + SIDX_TABLE_SIZE) != HS_OK)
        return hs_err_nomem(err, SIDX_HEADER_SIZE + SIDX_TABLE_SIZE);
    if (n_nulls) {
        roaring_bitmap_t *nb = roaring_bitmap_of_ptr((size_t)n_nulls,
                                                     (const uint32_t *)b->nulls.data);
        if (!nb)
            return hs_err_nomem(err, (size_t)n_nulls * 4);
        sec[SIDX_S_NULLS][0] = out->len - start;
        hs_status st = sidx_rb_put(nb, out);
        roaring_bitmap_free(nb);
        if (st != HS_OK)
            return hs_err_set(err, st, "scalar index: writing the null bitmap failed");
        sec[SIDX_S_NULLS][1] = out->len - start - sec[SIDX_S_NULLS][0];
    }
    uint32_t block_rows = 0;
    int64_t n_blocks = 0;
    if (kind == SIDX_INVERTED) {
        HS_TRY(sidx_inv_write(s, out, start, sec, &flags, err));
    } else {
        block_rows = SIDX_BLOCK_ROWS;
        n_blocks = (s->n + block_rows - 1) / block_rows;
        HS_TRY(sidx_range_write(s, block_rows, out, start, sec, err));
    }
    if (sidx_align8(out, start) != HS_OK)
        return hs_err_nomem(err, 8);
    uint8_t *h = out->data + start;
    memcpy(h, SIDX_MAGIC, 4);
    uint16_t version = SIDX_VERSION;
    memcpy(h + 4, &version, 2);
    h[6] = (uint8_t)kind;
    h[7] = (uint8_t)s->vk;
    sidx_wr32(h + 8, flags);
    sidx_wr32(h + 12, (uint32_t)s->scale);
    sidx_wr32(h + 16, (uint32_t)b->field_id);
    sidx_wr32(h + 20, block_rows);
    sidx_wr64(h + 24, (uint64_t)b->n_rows);
    sidx_wr64(h + 32, (uint64_t)(kind == SIDX_INVERTED ? s->n_distinct : -1));
    sidx_wr64(h + 40, (uint64_t)n_nulls);
    sidx_wr64(h + 48, (uint64_t)b->data_file_size);
    sidx_wr64(h + 56, (uint64_t)n_blocks);
    for (int k = 0; k < SIDX_N_SECTIONS; k++) {
        sidx_wr64(h + SIDX_HEADER_SIZE + 16 * k, sec[k][0]);
        sidx_wr64(h + SIDX_HEADER_SIZE + 16 * k + 8, sec[k][1]);
    }
    uint64_t sum = hs_xxh64(out->data + start, out->len - start, 0);
    if (hs_buf_put_u64le(out, sum) != HS_OK || hs_buf_append(out, SIDX_MAGIC, 4) != HS_OK)
        return hs_err_nomem(err, 12);
    return HS_OK;
}

hs_status sidx_builder_finish(sidx_builder *b, hs_buf *out, sidx_kind *kind_out, hs_error *err)
{
    if (!b || !out)
        return hs_err_set(err, HS_INVALID, "scalar index: no builder or output");
    if (b->finished)
        return hs_err_set(err, HS_INVALID, "scalar index: builder finished twice or after a "
                          "failed add");
    b->finished = true;
    sidx_sorted s;
    sort_mem m;
    memset(&m, 0, sizeof m);
    size_t start = out->len;
    hs_status st = sort_rows(b, &s, &m, err);
    if (st == HS_OK) {
        sidx_kind kind = b->kind;
        if (kind == SIDX_AUTO) {
            int64_t lim = b->n_rows / 8 > 1024 ? b->n_rows / 8 : 1024;
            kind = b->type == HS_TYPE_BOOL || s.n_distinct <= lim ? SIDX_INVERTED : SIDX_RANGE;
        }
        st = write_index(b, &s, kind, out, start, err);
        if (st == HS_OK && kind_out)
            *kind_out = kind;
    }
    sort_free(&m);
    if (st != HS_OK) {
        if (out->len > start)
            out->len = start;
        if (st == HS_NOMEM && err && err->code == HS_OK)
            hs_err_nomem(err, 0);
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* opening                                                             */

void sidx_close(sidx_index *ix) { hs_free(ix); }

void sidx_get_info(const sidx_index *ix, sidx_info *out) { *out = ix->info; }

static hs_status open_header(sidx_index *ix, const uint8_t *p, size_t n, const hs_field *f,
                             hs_error *err)
{
    size_t min = SIDX_HEADER_SIZE + SIDX_TABLE_SIZE + SIDX_TRAILER_SIZE;
    if (n < min)
        return HS_CORRUPT_AT(err, "scalar index: %zu bytes, shorter than the %zu of an empty index",
                             n, min);
    if (memcmp(p, SIDX_MAGIC, 4) != 0 || memcmp(p + n - 4, SIDX_MAGIC, 4) != 0)
        return HS_CORRUPT_AT(err, "scalar index: no HSIX magic at %s", memcmp(p, SIDX_MAGIC, 4)
                             ? "the start" : "the end (truncated?)");
    uint64_t want = sidx_rd64(p + n - SIDX_TRAILER_SIZE), got = hs_xxh64(p, n - SIDX_TRAILER_SIZE, 0);
    if (want != got)
        return HS_CORRUPT_AT(err, "scalar index: checksum mismatch (stored %016llx, computed "
                             "%016llx)", (unsigned long long)want, (unsigned long long)got);
    uint16_t version = sidx_rd16(p + 4);
    if (version != SIDX_VERSION)
        return HS_CORRUPT_AT(err, "scalar index: format version %u, this build reads %d", version,
                             SIDX_VERSION);
    int kind = p[6], vk = p[7];
    ix->flags = sidx_rd32(p + 8);
    ix->scale = (int32_t)sidx_rd32(p + 12);
    ix->field_id = (int32_t)sidx_rd32(p + 16);
    ix->block_rows = sidx_rd32(p + 20);
    ix->info.n_rows = (int64_t)sidx_rd64(p + 24);
    ix->info.n_distinct = (int64_t)sidx_rd64(p + 32);
    ix->info.n_nulls = (int64_t)sidx_rd64(p + 40);
    ix->info.data_file_size = (int64_t)sidx_rd64(p + 48);
    ix->n_blocks = (int64_t)sidx_rd64(p + 56);
    if (kind != SIDX_INVERTED && kind != SIDX_RANGE)
        return HS_CORRUPT_AT(err, "scalar index: unknown kind %d", kind);
    if (vk < PR_V_I64 || vk > PR_V_BYTES)
        return HS_CORRUPT_AT(err, "scalar index: unknown value kind %d", vk);
    ix->info.kind = (sidx_kind)kind;
    ix->info.value_kind = (pr_vkind)vk;
    if (f && pr_kind_of(f) != (pr_vkind)vk)
        return HS_CORRUPT_AT(err, "scalar index: holds value kind %d, column \"%s\" of type %s "
                             "has %d", vk, f->name ? f->name : "?", hs_type_name(f->type),
                             (int)pr_kind_of(f));
    if (vk == PR_V_I128 ? (f && ix->scale != f->scale) : ix->scale != 0)
        return HS_CORRUPT_AT(err, "scalar index: decimal scale %d does not match the column's",
                             ix->scale);
    if (ix->flags & ~SIDX_FLAG_WIDE)
        return HS_CORRUPT_AT(err, "scalar index: unknown flags 0x%x", ix->flags);
    const sidx_info *in = &ix->info;
    if (in->n_rows < 0 || in->n_rows > SIDX_MAX_ROWS || in->n_nulls < 0 ||
        in->n_nulls > in->n_rows || in->data_file_size < 0)
        return HS_CORRUPT_AT(err, "scalar index: bad counts (rows %lld, nulls %lld, data file "
                             "%lld bytes)", (long long)in->n_rows, (long long)in->n_nulls,
                             (long long)in->data_file_size);
    int64_t nonnull = in->n_rows - in->n_nulls;
    if (kind == SIDX_INVERTED) {
        if (in->n_distinct < 0 || in->n_distinct > nonnull || (nonnull > 0) != (in->n_distinct > 0)
            || ix->block_rows != 0 || ix->n_blocks != 0)
            return HS_CORRUPT_AT(err, "scalar index: %lld distinct values for %lld non-null rows",
                                 (long long)in->n_distinct, (long long)nonnull);
    } else {
        if (in->n_distinct != -1 || ix->block_rows == 0 || ix->block_rows > (1u << 20) ||
            ix->n_blocks != (nonnull + ix->block_rows - 1) / ix->block_rows)
            return HS_CORRUPT_AT(err, "scalar index: %lld blocks of %u pairs for %lld non-null "
                                 "rows", (long long)ix->n_blocks, ix->block_rows,
                                 (long long)nonnull);
    }
    size_t body_end = n - SIDX_TRAILER_SIZE;
    for (int k = 0; k < SIDX_N_SECTIONS; k++) {
        uint64_t off = sidx_rd64(p + SIDX_HEADER_SIZE + 16 * k);
        uint64_t len = sidx_rd64(p + SIDX_HEADER_SIZE + 16 * k + 8);
        if (len == 0) {
            ix->sec[k] = p + SIDX_HEADER_SIZE + SIDX_TABLE_SIZE;
            ix->sec_n[k] = 0;
            continue;
        }
        if (off < SIDX_HEADER_SIZE + SIDX_TABLE_SIZE || off > body_end || len > body_end - off)
            return HS_CORRUPT_AT(err, "scalar index: section %d at %llu, %llu bytes, is outside "
                                 "the %zu-byte body", k, (unsigned long long)off,
                                 (unsigned long long)len, body_end);
        ix->sec[k] = p + off;
        ix->sec_n[k] = (size_t)len;
    }
    if ((ix->sec_n[SIDX_S_NULLS] == 0) != (in->n_nulls == 0))
        return HS_CORRUPT_AT(err, "scalar index: %lld nulls but a null bitmap of %zu bytes",
                             (long long)in->n_nulls, ix->sec_n[SIDX_S_NULLS]);
    return HS_OK;
}

hs_status sidx_open(const uint8_t *p, size_t n, const hs_field *f, sidx_index **out,
                    hs_error *err)
{
    *out = NULL;
    if (!p && n)
        return hs_err_set(err, HS_INVALID, "scalar index: no bytes");
    sidx_index *ix = hs_calloc(1, sizeof *ix);
    if (!ix)
        return hs_err_nomem(err, sizeof *ix);
    ix->base = p;
    ix->size = n;
    hs_status st = open_header(ix, p, n, f, err);
    if (st == HS_OK)
        st = ix->info.kind == SIDX_INVERTED ? sidx_inv_open(ix, err) : sidx_range_open(ix, err);
    if (st != HS_OK) {
        hs_free(ix);
        return st;
    }
    *out = ix;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* lookups                                                             */

static hs_status load_nulls(const sidx_index *ix, roaring_bitmap_t **out, hs_error *err)
{
    if (ix->sec_n[SIDX_S_NULLS] == 0) {
        *out = roaring_bitmap_create();
        return *out ? HS_OK : hs_err_nomem(err, 64);
    }
    uint64_t card;
    HS_TRY(sidx_rb_load(ix->sec[SIDX_S_NULLS], ix->sec_n[SIDX_S_NULLS], (uint64_t)ix->info.n_rows,
                        out, &card, err));
    if (card != (uint64_t)ix->info.n_nulls) {
        roaring_bitmap_free(*out);
        *out = NULL;
        return HS_CORRUPT_AT(err, "scalar index: null bitmap holds %llu rows, header says %lld",
                             (unsigned long long)card, (long long)ix->info.n_nulls);
    }
    return HS_OK;
}

static hs_status all_rows(const sidx_index *ix, roaring_bitmap_t **out, hs_error *err)
{
    *out = roaring_bitmap_create();
    if (!*out)
        return hs_err_nomem(err, 64);
    roaring_bitmap_add_range(*out, 0, (uint64_t)ix->info.n_rows);
    return HS_OK;
}

static hs_status not_null(const sidx_index *ix, roaring_bitmap_t **out, hs_error *err)
{
    roaring_bitmap_t *nulls;
    HS_TRY(load_nulls(ix, &nulls, err));
    hs_status st = all_rows(ix, out, err);
    if (st == HS_OK)
        roaring_bitmap_andnot_inplace(*out, nulls);
    roaring_bitmap_free(nulls);
    return st;
}

/* Sets up the probe of `lit op` (op != NE); false when the literal's kind
 * cannot be compared with the index's values. */
static bool make_probe(const sidx_index *ix, const pr_val *lit, pr_op op, sidx_probe *pr)
{
    bool bytes = ix->info.value_kind == PR_V_BYTES;
    if (lit->kind == PR_V_NULL || (lit->kind == PR_V_BYTES) != bytes)
        return false;
    pr->lit = lit;
    pr->lit_nan = lit->kind == PR_V_F64 && isnan(lit->f);
    static const int lo[] = {0, 0, -1, -1, 1, 0}, hi[] = {0, 0, -1, 0, 1, 1};
    pr->clo = lo[op];
    pr->chi = hi[op];
    if (pr->lit_nan) { /* NaN = NaN, NaN <= NaN, NaN >= NaN; nothing else */
        pr->clo = op == PR_LT || op == PR_GT ? 1 : 0; /* [1, 0] is empty */
        pr->chi = 0;
    }
    return true;
}

/* The span of the probe in the kind's sorted order ([0, 0) when empty). */
static hs_status probe_span(const sidx_index *ix, const sidx_probe *pr, int64_t *lo, int64_t *hi,
                            hs_error *err)
{
    *lo = *hi = 0;
    if (pr->clo > pr->chi)
        return HS_OK;
    return ix->info.kind == SIDX_INVERTED ? sidx_inv_span(ix, pr, lo, hi, err)
                                          : sidx_range_span(ix, pr, lo, hi, err);
}

static hs_status collect_span(const sidx_index *ix, int64_t lo, int64_t hi, sidx_acc *acc,
                              hs_error *err)
{
    return ix->info.kind == SIDX_INVERTED ? sidx_inv_collect_span(ix, lo, hi, acc, err)
                                          : sidx_range_collect_span(ix, lo, hi, acc, err);
}

static int64_t span_rows(const sidx_index *ix, int64_t lo, int64_t hi)
{
    return ix->info.kind == SIDX_INVERTED ? sidx_inv_span_rows(ix, lo, hi) : hi - lo;
}

static bool leaf_ok(const sidx_index *ix, const pr_expr *leaf, hs_error *err, hs_status *st)
{
    int need = leaf->kind == PR_E_CMP ? 1 : 0;
    if (leaf->n_lits < need || (leaf->n_lits > 0 && !leaf->vals)) {
        *st = hs_err_set(err, HS_INVALID, "scalar index: lookup of an unbound leaf");
        return false;
    }
    if (leaf->kind == PR_E_CMP && ((int)leaf->op < (int)PR_EQ || (int)leaf->op > (int)PR_GE)) {
        *st = hs_err_set(err, HS_INVALID, "scalar index: unknown comparison %d", (int)leaf->op);
        return false;
    }
    for (int k = 0; k < leaf->n_lits; k++) {
        sidx_probe pr;
        if (!make_probe(ix, &leaf->vals[k], PR_EQ, &pr)) {
            *st = hs_err_set(err, HS_UNSUPPORTED, "scalar index: a literal of kind %d cannot be "
                             "compared with values of kind %d", (int)leaf->vals[k].kind,
                             (int)ix->info.value_kind);
            return false;
        }
    }
    return true;
}

/* A comparison other than != : one span. */
static bool is_span_leaf(const pr_expr *leaf)
{
    return leaf->kind == PR_E_CMP && leaf->op != PR_NE;
}

/* Rows of the spans [lo, hi) in acc into a bitmap. */
static hs_status spans_bitmap(const sidx_index *ix, const int64_t *lo, const int64_t *hi, int n,
                              roaring_bitmap_t **out, hs_error *err)
{
    sidx_acc acc;
    sidx_acc_init(&acc, (uint64_t)ix->info.n_rows);
    hs_status st = HS_OK;
    for (int k = 0; k < n && st == HS_OK; k++)
        if (lo[k] < hi[k])
            st = collect_span(ix, lo[k], hi[k], &acc, err);
    if (st != HS_OK) {
        sidx_acc_free(&acc);
        return st;
    }
    return sidx_acc_finish(&acc, out, err);
}

hs_status sidx_lookup(const sidx_index *ix, const pr_expr *leaf, roaring_bitmap_t **out,
                      hs_error *err)
{
    *out = NULL;
    if (!ix || !leaf)
        return hs_err_set(err, HS_INVALID, "scalar index: lookup without index or leaf");
    switch (leaf->kind) {
    case PR_E_TRUE: return all_rows(ix, out, err);
    case PR_E_FALSE:
        *out = roaring_bitmap_create();
        return *out ? HS_OK : hs_err_nomem(err, 64);
    case PR_E_IS_NULL: return load_nulls(ix, out, err);
    case PR_E_NOT_NULL: return not_null(ix, out, err);
    case PR_E_CMP: case PR_E_IN: case PR_E_NOT_IN: break;
    default:
        return hs_err_set(err, HS_UNSUPPORTED, "scalar index: leaf kind %d is not an index lookup",
                          (int)leaf->kind);
    }
    hs_status st = HS_OK;
    if (!leaf_ok(ix, leaf, err, &st))
        return st;
    bool negate = leaf->kind == PR_E_NOT_IN || (leaf->kind == PR_E_CMP && leaf->op == PR_NE);
    int n = leaf->kind == PR_E_CMP ? 1 : leaf->n_lits;
    int64_t one_lo, one_hi, *lo = &one_lo, *hi = &one_hi;
    if (n > 1) {
        lo = hs_malloc(sizeof *lo * (size_t)n * 2);
        if (!lo)
            return hs_err_nomem(err, sizeof *lo * (size_t)n * 2);
        hi = lo + n;
    }
    for (int k = 0; k < n && st == HS_OK; k++) {
        sidx_probe pr;
        pr_op op = leaf->kind == PR_E_CMP && leaf->op != PR_NE ? leaf->op : PR_EQ;
        make_probe(ix, &leaf->vals[k], op, &pr);
        st = probe_span(ix, &pr, &lo[k], &hi[k], err);
    }
    roaring_bitmap_t *hit = NULL;
    if (st == HS_OK)
        st = spans_bitmap(ix, lo, hi, n, &hit, err);
    if (n > 1)
        hs_free(lo);
    HS_TRY(st);
    if (!negate) {
        *out = hit;
        return HS_OK;
    }
    st = not_null(ix, out, err);
    if (st == HS_OK)
        roaring_bitmap_andnot_inplace(*out, hit);
    roaring_bitmap_free(hit);
    return st;
}

hs_status sidx_lookup_all(const sidx_index *ix, const pr_expr *const *leaves, int n,
                          roaring_bitmap_t **out, hs_error *err)
{
    *out = NULL;
    if (!ix || (n > 0 && !leaves))
        return hs_err_set(err, HS_INVALID, "scalar index: lookup without index or leaves");
    hs_status st = HS_OK;
    for (int k = 0; k < n; k++) {
        const pr_expr *e = leaves[k];
        if (!e)
            return hs_err_set(err, HS_INVALID, "scalar index: leaf %d is NULL", k);
        if (e->kind != PR_E_TRUE && e->kind != PR_E_FALSE && e->kind != PR_E_IS_NULL &&
            e->kind != PR_E_NOT_NULL && e->kind != PR_E_CMP && e->kind != PR_E_IN &&
            e->kind != PR_E_NOT_IN)
            return hs_err_set(err, HS_UNSUPPORTED, "scalar index: leaf kind %d is not an index "
                              "lookup", (int)e->kind);
        if (e->kind == PR_E_CMP || e->kind == PR_E_IN || e->kind == PR_E_NOT_IN)
            if (!leaf_ok(ix, e, err, &st))
                return st;
    }
    /* comparisons: one span each, intersected */
    int64_t lo = 0, hi = INT64_MAX;
    bool any_span = false, empty = false;
    for (int k = 0; k < n && st == HS_OK && !empty; k++) {
        if (leaves[k]->kind == PR_E_FALSE)
            empty = true;
        if (!is_span_leaf(leaves[k]))
            continue;
        sidx_probe pr;
        int64_t a, b;
        make_probe(ix, &leaves[k]->vals[0], leaves[k]->op, &pr);
        st = probe_span(ix, &pr, &a, &b, err);
        lo = a > lo ? a : lo;
        hi = b < hi ? b : hi;
        any_span = true;
        empty |= lo >= hi;
    }
    HS_TRY(st);
    roaring_bitmap_t *r = NULL;
    if (empty)
        r = roaring_bitmap_create();
    else if (any_span)
        st = spans_bitmap(ix, &lo, &hi, 1, &r, err);
    else
        st = all_rows(ix, &r, err);
    if (st == HS_OK && !r)
        st = hs_err_nomem(err, 64);
    HS_TRY(st);
    /* the rest: bitmaps, intersected */
    for (int k = 0; k < n && st == HS_OK && !empty; k++) {
        const pr_expr *e = leaves[k];
        if (is_span_leaf(e) || e->kind == PR_E_TRUE || e->kind == PR_E_FALSE)
            continue;
        if (any_span && e->kind == PR_E_NOT_NULL)
            continue; /* spans hold only non-null rows */
        if (any_span && e->kind == PR_E_IS_NULL) {
            roaring_bitmap_clear(r);
            break;
        }
        roaring_bitmap_t *x = NULL;
        st = sidx_lookup(ix, e, &x, err);
        if (st == HS_OK) {
            roaring_bitmap_and_inplace(r, x);
            roaring_bitmap_free(x);
        }
    }
    if (st != HS_OK) {
        roaring_bitmap_free(r);
        return st;
    }
    *out = r;
    return HS_OK;
}

int64_t sidx_estimate(const sidx_index *ix, const pr_expr *leaf)
{
    const sidx_info *in = &ix->info;
    int64_t nonnull = in->n_rows - in->n_nulls, est = 0;
    switch (leaf->kind) {
    case PR_E_TRUE: return in->n_rows;
    case PR_E_FALSE: return 0;
    case PR_E_IS_NULL: return in->n_nulls;
    case PR_E_NOT_NULL: return nonnull;
    case PR_E_CMP: case PR_E_IN: case PR_E_NOT_IN: break;
    default: return in->n_rows;
    }
    hs_status st;
    if (!leaf_ok(ix, leaf, NULL, &st))
        return in->n_rows;
    bool negate = leaf->kind == PR_E_NOT_IN || (leaf->kind == PR_E_CMP && leaf->op == PR_NE);
    int n = leaf->kind == PR_E_CMP ? 1 : leaf->n_lits;
    for (int k = 0; k < n; k++) {
        sidx_probe pr;
        int64_t lo, hi;
        pr_op op = leaf->kind == PR_E_CMP && leaf->op != PR_NE ? leaf->op : PR_EQ;
        make_probe(ix, &leaf->vals[k], op, &pr);
        if (probe_span(ix, &pr, &lo, &hi, NULL) != HS_OK)
            return negate ? nonnull : in->n_rows; /* damaged: plan for the worst */
        est += span_rows(ix, lo, hi);
    }
    if (est > nonnull)
        est = nonnull;
    return negate ? nonnull - est : est;
}
