/* libFuzzer target: scalar index files (index/scalar/sidx.h).
 *
 * The first input byte picks a mode; the rest is the payload.
 *   bits 0-1  column type: int64, float64, string, decimal(38, 2)
 *   bit 5     open without an expected column type
 *   bit 6     recompute the trailer checksum first, so that mutations reach
 *             the header, table, values, postings and block checks instead
 *             of stopping at the checksum
 *   bit 7     build mode: the payload is column values instead of a file;
 *             build an index of it (kind from bit 4: inverted / range), open
 *             it, and compare every kind of lookup, and sidx_lookup_all of
 *             pairs of them, with pr_filter_eval over the same column; a
 *             mismatch aborts
 * Decode mode opens the payload (copied into an exact-size buffer so that
 * ASan sees any over-read) and runs lookups of every leaf kind with
 * literals taken from the payload; results must stay below n_rows. */
#include "base/hash.h"
#include "base/mem.h"
#include "index/scalar/sidx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const hs_type TYPES[4] = {HS_TYPE_INT64, HS_TYPE_FLOAT64, HS_TYPE_STRING,
                                 HS_TYPE_DECIMAL128};

static void make_field(hs_field *f, int t)
{
    hs_field_init(f, "c", TYPES[t], true);
    f->field_id = 1;
    if (TYPES[t] == HS_TYPE_DECIMAL128) {
        f->precision = 38;
        f->scale = 2;
    }
}

/* A literal of the column's kind from up to 16 bytes at p. */
static void make_val(int t, const uint8_t *p, size_t n, pr_val *v)
{
    uint8_t b[16] = {0};
    memcpy(b, p, n < 16 ? n : 16);
    memset(v, 0, sizeof *v);
    switch (TYPES[t]) {
    case HS_TYPE_INT64:
        v->kind = PR_V_I64;
        memcpy(&v->i, b, 8);
        if (b[8] & 1) { /* sometimes a mixed F64 literal */
            v->kind = PR_V_F64;
            v->f = (double)v->i / 4.0;
        }
        break;
    case HS_TYPE_FLOAT64:
        v->kind = PR_V_F64;
        memcpy(&v->f, b, 8);
        break;
    case HS_TYPE_STRING:
        v->kind = PR_V_BYTES;
        v->p = p;
        v->n = n < 6 ? n : 6;
        break;
    default:
        v->kind = PR_V_I128;
        v->scale = 2;
        memcpy(&v->d, b, 16);
        break;
    }
}

typedef struct leafset {
    pr_expr e[12];
    pr_val v[2];
    int n;
} leafset;

static void make_leaves(leafset *L, const hs_field *f, int t, const uint8_t *p, size_t n)
{
    memset(L, 0, sizeof *L);
    size_t half = n / 2;
    make_val(t, p, half, &L->v[0]);
    make_val(t, p + half, n - half, &L->v[1]);
    for (int op = PR_EQ; op <= PR_GE; op++) {
        pr_expr *e = &L->e[L->n++];
        e->kind = PR_E_CMP;
        e->op = (pr_op)op;
        e->n_lits = 1;
        e->vals = &L->v[op & 1];
    }
    static const pr_ekind more[] = {PR_E_IN, PR_E_NOT_IN, PR_E_IS_NULL, PR_E_NOT_NULL,
                                     PR_E_TRUE, PR_E_FALSE};
    for (int k = 0; k < 6; k++) {
        pr_expr *e = &L->e[L->n++];
        e->kind = more[k];
        e->n_lits = k < 2 ? 2 : 0;
        e->vals = k < 2 ? L->v : NULL;
    }
    for (int k = 0; k < L->n; k++) {
        L->e[k].field = f;
        L->e[k].field_id = f->field_id;
    }
}

static void decode_mode(int mode, const uint8_t *data, size_t size)
{
    int t = mode & 3;
    hs_field f;
    make_field(&f, t);
    uint8_t *p = malloc(size ? size : 1);
    memcpy(p, data, size);
    if ((mode & 0x40) && size >= 12) {
        uint64_t sum = hs_xxh64(p, size - 12, 0);
        memcpy(p + size - 12, &sum, 8);
    }
    sidx_index *ix = NULL;
    hs_error err = {0};
    if (sidx_open(p, size, (mode & 0x20) ? NULL : &f, &ix, &err) == HS_OK) {
        sidx_info info;
        sidx_get_info(ix, &info);
        leafset L;
        make_leaves(&L, &f, t, data, size < 32 ? size : 32);
        for (int k = 0; k < L.n; k++) {
            roaring_bitmap_t *bm = NULL;
            if (sidx_lookup(ix, &L.e[k], &bm, &err) == HS_OK) {
                if (roaring_bitmap_get_cardinality(bm) &&
                    roaring_bitmap_maximum(bm) >= (uint64_t)info.n_rows)
                    abort();
                roaring_bitmap_free(bm);
            }
            int64_t est = sidx_estimate(ix, &L.e[k]);
            if (est < 0 || est > info.n_rows)
                abort();
        }
        /* an AND of comparisons: x >= v0 AND x < v1 (AND ... the IN) */
        const pr_expr *both[3] = {&L.e[PR_GE], &L.e[PR_LT], &L.e[6]};
        roaring_bitmap_t *bm = NULL;
        if (sidx_lookup_all(ix, both, 2 + (mode & 1), &bm, &err) == HS_OK) {
            if (roaring_bitmap_get_cardinality(bm) &&
                roaring_bitmap_maximum(bm) >= (uint64_t)info.n_rows)
                abort();
            roaring_bitmap_free(bm);
        }
        sidx_close(ix);
    }
    free(p);
    hs_field_clear(&f);
}

/* Column of the payload: records of 1 flag byte + a value (9 bytes for
 * numbers: flag bit 0 = null, bit 1 = fold into 8 values for duplicates;
 * strings: flag byte's low 3 bits = length). */
static hs_column *payload_column(const hs_field *f, int t, const uint8_t *d, size_t n)
{
    hs_column *c = NULL;
    if (hs_col_create(f, 16, &c, NULL) != HS_OK)
        return NULL;
    size_t at = 0;
    while (at < n && c->length < 5000) {
        uint8_t flag = d[at++];
        hs_status st;
        if (flag & 1) {
            st = hs_col_append_null(c);
        } else if (TYPES[t] == HS_TYPE_STRING) {
            size_t len = flag >> 5;
            if (len > n - at)
                len = n - at;
            st = hs_col_append_bytes(c, d + at, len);
            at += len;
        } else {
            uint8_t b[16] = {0};
            size_t w = TYPES[t] == HS_TYPE_DECIMAL128 ? 16 : 8, len = n - at < 8 ? n - at : 8;
            memcpy(b, d + at, len);
            at += len;
            if (flag & 2)
                memset(b + 1, 0, 15);
            if (flag & 2)
                b[0] &= 7;
            if (w == 16 && (b[7] & 0x80))
                memset(b + 8, 0xff, 8); /* sign-extend */
            st = hs_col_append_fixed(c, b);
        }
        if (st != HS_OK) {
            hs_col_free(c);
            return NULL;
        }
    }
    return c;
}

static void build_mode(int mode, const uint8_t *data, size_t size)
{
    int t = mode & 3;
    hs_field schema, col;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    make_field(&col, t);
    if (hs_field_add_child(&schema, &col) != HS_OK)
        abort();
    const hs_field *f = &schema.children[0];
    size_t lit_n = size < 32 ? size : 32;
    hs_column *c = payload_column(f, t, data + lit_n, size - lit_n);
    sidx_builder *b = NULL;
    hs_buf file = {0};
    hs_error err = {0};
    if (!c || sidx_builder_new((mode & 0x10) ? SIDX_RANGE : SIDX_INVERTED, f, 1, &b, &err) != HS_OK
        || sidx_builder_add(b, c, 0, &err) != HS_OK || sidx_builder_finish(b, &file, NULL, &err)
        != HS_OK)
        abort();
    sidx_builder_free(b);
    sidx_index *ix = NULL;
    if (sidx_open(file.data, file.len, f, &ix, &err) != HS_OK)
        abort();
    hs_column *cols[1] = {c};
    hs_batch batch = {.schema = schema, .n_rows = c->length, .n_cols = 1, .cols = cols};
    uint8_t *sel = malloc((size_t)c->length + 1);
    leafset L;
    make_leaves(&L, f, t, data, lit_n);
    for (int k = 0; k < L.n; k++) {
        pr_filter flt;
        memset(&flt, 0, sizeof flt);
        flt.root = &L.e[k];
        flt.bound = true;
        int64_t m = 0;
        roaring_bitmap_t *bm = NULL;
        if (pr_filter_eval(&flt, &batch, sel, &m, &err) != HS_OK ||
            sidx_lookup(ix, &L.e[k], &bm, &err) != HS_OK)
            abort();
        if (roaring_bitmap_get_cardinality(bm) != (uint64_t)m)
            abort();
        for (int64_t i = 0; i < c->length; i++)
            if (sel[i] && !roaring_bitmap_contains(bm, (uint32_t)i))
                abort();
        roaring_bitmap_free(bm);
    }
    /* ANDs of two leaves through sidx_lookup_all against the oracle's AND */
    uint8_t *sel2 = malloc((size_t)c->length + 1);
    for (int a = 0; a < L.n; a += 3) {
        int b2 = (a * 7 + 5) % L.n;
        const pr_expr *pair[2] = {&L.e[a], &L.e[b2]};
        pr_filter fa, fb;
        memset(&fa, 0, sizeof fa);
        memset(&fb, 0, sizeof fb);
        fa.root = &L.e[a];
        fb.root = &L.e[b2];
        fa.bound = fb.bound = true;
        int64_t m1, m2, want = 0;
        roaring_bitmap_t *bm = NULL;
        if (pr_filter_eval(&fa, &batch, sel, &m1, &err) != HS_OK ||
            pr_filter_eval(&fb, &batch, sel2, &m2, &err) != HS_OK ||
            sidx_lookup_all(ix, pair, 2, &bm, &err) != HS_OK)
            abort();
        for (int64_t i = 0; i < c->length; i++) {
            bool hit = sel[i] && sel2[i];
            want += hit;
            if (hit && !roaring_bitmap_contains(bm, (uint32_t)i))
                abort();
        }
        if (roaring_bitmap_get_cardinality(bm) != (uint64_t)want)
            abort();
        roaring_bitmap_free(bm);
    }
    free(sel2);
    free(sel);
    sidx_close(ix);
    hs_buf_free(&file);
    hs_col_free(c);
    hs_field_clear(&schema);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0];
    if (mode & 0x80)
        build_mode(mode, data + 1, size - 1);
    else
        decode_mode(mode, data + 1, size - 1);
    return 0;
}
