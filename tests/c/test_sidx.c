/*
 * tests/c/test_sidx.c - scalar sidecar indexes (index/scalar/sidx.h).
 *
 * Oracle: pr_filter_eval (expr/pred.c), the exact row-by-row evaluator
 * the scan uses, run over the same column.  For random columns of every
 * indexable type (nulls, NaN, -0.0, infinities, empty strings, bytes above
 * 0x7f, duplicates, all-null, one row, no rows) the test builds an inverted,
 * a range and an auto index (in several batches), serializes and opens
 * each, then parses + binds random filters over the column's schema, walks
 * to their leaves, and checks that sidx_lookup of every leaf returns
 * exactly the rows where pr_filter_eval says the leaf is TRUE.  Distinct
 * counts are checked against a sort of the column's values with
 * pr_val_cmp.
 *
 * Robustness: every truncation and a bit flip at every byte of a few index
 * files must give HS_CORRUPT; interior damage with the checksum recomputed
 * must give HS_CORRUPT or a correct-looking answer (positions < n_rows),
 * never a crash (run under ASan/UBSan in CI); allocation failure at every
 * step of build/open/lookup must fail cleanly.  Every test checks that
 * hs_mem_live_count returns to its start.
 */
#include "base/hash.h"
#include "base/mem.h"
#include "columnar/jsonl.h"
#include "harness.h"
#include "index/scalar/sidx.h"
#include "index/scalar/sidx_int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define LEAK_START() int64_t live0_ = hs_mem_live_count()
#define LEAK_END() CHECK(hs_mem_live_count() == live0_)

/* ---- random numbers (splitmix64; fixed seeds keep runs reproducible) ---- */

static uint64_t rng_state = 0x5eed;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t rndn(uint64_t n) { return n ? rnd() % n : 0; }

/* ---- column types under test ---- */

typedef struct spec {
    const char *name;
    hs_type type;
    int32_t arg;              /* FIXED_BINARY width, DECIMAL scale */
    hs_time_unit unit;
} spec;

static const spec SPECS[] = {
    {"bool", HS_TYPE_BOOL, 0, 0},       {"i8", HS_TYPE_INT8, 0, 0},
    {"i16", HS_TYPE_INT16, 0, 0},       {"i32", HS_TYPE_INT32, 0, 0},
    {"i64", HS_TYPE_INT64, 0, 0},       {"u8", HS_TYPE_UINT8, 0, 0},
    {"u16", HS_TYPE_UINT16, 0, 0},      {"u32", HS_TYPE_UINT32, 0, 0},
    {"u64", HS_TYPE_UINT64, 0, 0},      {"f16", HS_TYPE_FLOAT16, 0, 0},
    {"f32", HS_TYPE_FLOAT32, 0, 0},     {"f64", HS_TYPE_FLOAT64, 0, 0},
    {"dec", HS_TYPE_DECIMAL128, 2, 0},  {"date", HS_TYPE_DATE32, 0, 0},
    {"t32", HS_TYPE_TIME32, 0, HS_UNIT_MILLI}, {"t64", HS_TYPE_TIME64, 0, HS_UNIT_MICRO},
    {"ts", HS_TYPE_TIMESTAMP, 0, HS_UNIT_MICRO}, {"str", HS_TYPE_STRING, 0, 0},
    {"bin", HS_TYPE_BINARY, 0, 0},      {"fixed", HS_TYPE_FIXED_BINARY, 4, 0},
};
#define N_SPECS ((int)(sizeof SPECS / sizeof SPECS[0]))

static void make_schema(const spec *sp, hs_field *schema)
{
    hs_field c;
    hs_field_init(schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&c, "c", sp->type, true);
    c.field_id = 7;
    if (sp->type == HS_TYPE_FIXED_BINARY)
        c.width = sp->arg;
    if (sp->type == HS_TYPE_DECIMAL128) {
        c.precision = 38;
        c.scale = sp->arg;
    }
    c.unit = sp->unit;
    if (hs_field_add_child(schema, &c) != HS_OK)
        abort();
}

/* A raw value of the column's physical type (fixed bytes, or bytes). */
typedef struct raw {
    uint8_t b[16];
    size_t n;
} raw;

static const uint8_t ALPHA[] = {'a', 'b', 'c', 'z', '\'', 0x01, 0x7f, 0xc3, 0xa9, 0xff, ' '};

static void gen_raw(const spec *sp, bool wide, raw *r)
{
    memset(r, 0, sizeof *r);
    uint64_t x = rnd();
    int special = (int)rndn(8);
    switch (sp->type) {
    case HS_TYPE_BOOL: r->b[0] = x & 1; r->n = 1; return;
    case HS_TYPE_INT8: case HS_TYPE_UINT8: r->n = 1; break;
    case HS_TYPE_INT16: case HS_TYPE_UINT16: case HS_TYPE_FLOAT16: r->n = 2; break;
    case HS_TYPE_INT32: case HS_TYPE_UINT32: case HS_TYPE_DATE32: case HS_TYPE_TIME32: r->n = 4; break;
    case HS_TYPE_FLOAT32: {
        static const float sp32[] = {NAN, -NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 1.5f, -2.25f};
        float f = special < 3 ? sp32[rndn(8)] : (float)((int64_t)rndn(2001) - 1000) / 8.0f;
        if (wide && special >= 3)
            f = (float)((double)(int64_t)x / 1e9);
        memcpy(r->b, &f, 4);
        r->n = 4;
        return;
    }
    case HS_TYPE_FLOAT64: {
        static const double sp64[] = {NAN, -NAN, -0.0, 0.0, INFINITY, -INFINITY, 0.1, -1e300};
        double d = special < 3 ? sp64[rndn(8)] : (double)((int64_t)rndn(2001) - 1000) / 8.0;
        if (wide && special >= 3)
            d = (double)(int64_t)x / 1e9;
        if (special == 3 && (x & 1)) { /* a NaN with a payload */
            uint64_t bits = 0x7FF0000000000001ull | (x & 0x000FFFFFFFFFFFFEull) | (x & (1ull << 63));
            memcpy(&d, &bits, 8);
        }
        memcpy(r->b, &d, 8);
        r->n = 8;
        return;
    }
    case HS_TYPE_DECIMAL128: {
        __int128 v = (int64_t)(wide ? (int64_t)(x >> 20) - (int64_t)(1ll << 43) : (int64_t)rndn(201) - 100);
        if (special == 0 && wide)
            v = (__int128)(((unsigned __int128)x << 64) | rnd()); /* beyond int64 */
        memcpy(r->b, &v, 16);
        r->n = 16;
        return;
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: case HS_TYPE_FIXED_BINARY: {
        size_t len = sp->type == HS_TYPE_FIXED_BINARY ? (size_t)sp->arg : rndn(wide ? 14 : 4);
        for (size_t i = 0; i < len; i++) {
            r->b[i] = ALPHA[rndn(sizeof ALPHA)];
            if (sp->type != HS_TYPE_STRING && rndn(10) == 0)
                r->b[i] = 0;
        }
        r->n = len;
        return;
    }
    default: r->n = 8; break; /* INT64, UINT64, TIME64, TIMESTAMP */
    }
    /* integers: small pool values, extremes, or random bits */
    if (!wide)
        x = (uint64_t)((int64_t)rndn(41) - 20);
    if (special == 0)
        x = 0;
    else if (special == 1)
        x = rnd() & 1 ? ~0ull >> 1 >> (64 - 8 * r->n) : ~(~0ull >> 1 >> (64 - 8 * r->n)); /* max / min */
    memcpy(r->b, &x, r->n);
}

static hs_status append_raw(hs_column *c, const raw *r)
{
    if (c->type == HS_TYPE_STRING || c->type == HS_TYPE_BINARY || c->type == HS_TYPE_FIXED_BINARY)
        return hs_col_append_bytes(c, r->b, r->n);
    return hs_col_append_fixed(c, r->b);
}

typedef enum card_mode { CARD_LOW, CARD_MID, CARD_HIGH, CARD_SORTED, CARD_PREFIX } card_mode;

/* Strings sharing long prefixes (0-40 bytes of 'p' or NUL), some of them
 * prefixes of others: what makes the 8-byte-chunk string sort recurse. */
static void prefix_raw(const spec *sp, uint8_t *big, size_t *big_n)
{
    static const size_t plen[] = {0, 7, 8, 9, 16, 17, 24, 40};
    size_t pl = plen[rndn(8)], tail = rndn(6);
    uint8_t fill = sp->type == HS_TYPE_STRING || rndn(3) ? 'p' : 0;
    for (size_t i = 0; i < pl; i++)
        big[i] = fill;
    for (size_t i = 0; i < tail; i++)
        big[pl + i] = sp->type == HS_TYPE_STRING ? ALPHA[rndn(4)] : (uint8_t)rndn(3);
    *big_n = pl + tail;
}

/* Row i of an ascending column (with repeats): integers, floats, decimals,
 * zero-padded decimal text.  Narrow integer types wrap, which is fine. */
static void sorted_raw(const spec *sp, int64_t i, raw *r)
{
    int64_t v = i / 3 * 7 - 1000;
    memset(r, 0, sizeof *r);
    switch (sp->type) {
    case HS_TYPE_BOOL: r->b[0] = i > 100; r->n = 1; return;
    case HS_TYPE_FLOAT16: { uint16_t h = hs_float_to_half((float)v / 64.0f); memcpy(r->b, &h, 2); r->n = 2; return; }
    case HS_TYPE_FLOAT32: { float f = (float)v / 4.0f; memcpy(r->b, &f, 4); r->n = 4; return; }
    case HS_TYPE_FLOAT64: { double d = (double)v / 4.0; memcpy(r->b, &d, 8); r->n = 8; return; }
    case HS_TYPE_DECIMAL128: { __int128 d = v; memcpy(r->b, &d, 16); r->n = 16; return; }
    case HS_TYPE_STRING: case HS_TYPE_BINARY:
        r->n = (size_t)snprintf((char *)r->b, sizeof r->b, "%08lld", (long long)(v + 1000));
        return;
    case HS_TYPE_FIXED_BINARY:
        for (int k = 0; k < 4; k++)
            r->b[k] = (uint8_t)((v + 1000) >> (8 * (3 - k)));
        r->n = 4;
        return;
    default:
        r->n = (size_t)hs_type_width(&(hs_field){.type = sp->type});
        memcpy(r->b, &v, r->n);
        return;
    }
}

/* n rows, nulls with probability null_pct/100; values from a pool of 6
 * (LOW) or 300 (MID), or fresh wide values (HIGH). */
static hs_column *gen_column(const hs_field *f, const spec *sp, int64_t n, card_mode mode,
                             int null_pct)
{
    hs_column *c = NULL;
    if (hs_col_create(f, n, &c, NULL) != HS_OK)
        abort();
    int pool_n = mode == CARD_LOW ? 6 : 300;
    raw pool[300];
    for (int i = 0; i < pool_n; i++)
        gen_raw(sp, mode != CARD_LOW, &pool[i]);
    for (int64_t i = 0; i < n; i++) {
        hs_status st;
        if ((int)rndn(100) < null_pct) {
            st = hs_col_append_null(c);
        } else if (mode == CARD_PREFIX && (sp->type == HS_TYPE_STRING || sp->type == HS_TYPE_BINARY)) {
            uint8_t big[64];
            size_t big_n;
            prefix_raw(sp, big, &big_n);
            st = hs_col_append_bytes(c, big, big_n);
        } else if (mode == CARD_SORTED) {
            raw r;
            sorted_raw(sp, i, &r);
            st = append_raw(c, &r);
        } else if (mode == CARD_HIGH || mode == CARD_PREFIX) {
            raw r;
            gen_raw(sp, true, &r);
            st = append_raw(c, &r);
        } else {
            st = append_raw(c, &pool[rndn((uint64_t)pool_n)]);
        }
        if (st != HS_OK)
            abort();
    }
    return c;
}

/* ---- literals as filter text ---- */

static void put_quoted(hs_buf *b, const uint8_t *p, size_t n)
{
    if (hs_buf_append_byte(b, '\'') != HS_OK)
        abort();
    for (size_t i = 0; i < n && p[i]; i++) { /* a literal cannot hold NUL */
        if (p[i] == '\'' && hs_buf_append_byte(b, '\'') != HS_OK)
            abort();
        if (hs_buf_append_byte(b, p[i]) != HS_OK)
            abort();
    }
    if (hs_buf_append_byte(b, '\'') != HS_OK)
        abort();
}

static void put_double(hs_buf *b, double d)
{
    hs_status st;
    if (isnan(d))
        st = hs_buf_puts(b, rnd() & 1 ? "'NaN'" : "'nan'");
    else if (isinf(d))
        st = hs_buf_puts(b, d > 0 ? "'inf'" : "'-inf'");
    else
        st = hs_buf_printf(b, "%.17g", d);
    if (st != HS_OK)
        abort();
}

/* Text of row `row`'s value of column c (non-null), or of a fresh value. */
static void put_literal(hs_buf *b, const hs_field *f, const spec *sp, const hs_column *c)
{
    pr_val v;
    memset(&v, 0, sizeof v);
    bool have = false;
    if (c->length > 0 && rndn(4) != 0) {
        for (int tries = 0; tries < 8 && !have; tries++)
            have = pr_val_get(f, c, (int64_t)rndn((uint64_t)c->length), &v);
    }
    raw r;
    if (!have) {
        gen_raw(sp, rnd() & 1, &r);
        hs_column *one = NULL;
        if (hs_col_create(f, 1, &one, NULL) != HS_OK || append_raw(one, &r) != HS_OK)
            abort();
        pr_val w;
        if (!pr_val_get(f, one, 0, &w))
            abort();
        if (w.kind == PR_V_BYTES) { /* one's bytes die with it */
            if (w.n)
                memcpy(r.b, w.p, w.n);
            r.n = w.n;
            w.p = r.b;
        }
        v = w;
        hs_col_free(one);
    }
    hs_status st = HS_OK;
    switch (v.kind) {
    case PR_V_I64:
        if (sp->type == HS_TYPE_BOOL)
            st = hs_buf_puts(b, v.i ? "true" : "false");
        else if (rndn(6) == 0)
            st = hs_buf_printf(b, "%lld.5", (long long)v.i); /* an F64 literal */
        else if (rndn(8) == 0)
            st = hs_buf_printf(b, "%lld.0", (long long)v.i);
        else
            st = hs_buf_printf(b, "%lld", (long long)v.i);
        break;
    case PR_V_F64:
        put_double(b, v.f);
        break;
    case PR_V_I128: {
        if (v.d > ((__int128)1 << 62) || v.d < -((__int128)1 << 62)) {
            st = hs_buf_printf(b, "%lld", (long long)rndn(100));
            break;
        }
        long long u = (long long)v.d, a = u < 0 ? -u : u;
        st = hs_buf_printf(b, "%s%lld.%02lld%s", u < 0 ? "-" : "", a / 100, a % 100,
                           rndn(6) == 0 ? "1" : ""); /* an extra digit makes an F64 literal */
        break;
    }
    default:
        put_quoted(b, v.p, v.n);
        break;
    }
    if (st != HS_OK)
        abort();
}

static const char *const OPS[] = {"=", "!=", "<", "<=", ">", ">=", "<>", "=="};

/* A random filter over column c: a leaf, a negated leaf, or AND/OR of two. */
static void gen_filter(hs_buf *b, const hs_field *f, const spec *sp, const hs_column *c, int depth)
{
    int kind = (int)rndn(depth ? 10 : 12);
    hs_status st = HS_OK;
    if (kind <= 4) {
        st = hs_buf_puts(b, rnd() & 1 ? "c " : "\"c\" ");
        if (st == HS_OK)
            st = hs_buf_printf(b, "%s ", OPS[rndn(8)]);
        if (st == HS_OK)
            put_literal(b, f, sp, c);
    } else if (kind == 5) { /* literal first */
        put_literal(b, f, sp, c);
        st = hs_buf_printf(b, " %s c", OPS[rndn(6)]);
    } else if (kind <= 7) {
        st = hs_buf_puts(b, kind == 6 ? "c IN (" : "c NOT IN (");
        int n = 1 + (int)rndn(4);
        for (int k = 0; k < n && st == HS_OK; k++) {
            if (k)
                st = hs_buf_puts(b, ", ");
            put_literal(b, f, sp, c);
        }
        if (st == HS_OK)
            st = hs_buf_puts(b, ")");
    } else if (kind == 8) {
        st = hs_buf_puts(b, "c IS NULL");
    } else if (kind == 9) {
        st = hs_buf_puts(b, "c IS NOT NULL");
    } else if (kind == 10) {
        st = hs_buf_puts(b, "NOT (");
        if (st == HS_OK)
            gen_filter(b, f, sp, c, depth + 1);
        if (st == HS_OK)
            st = hs_buf_puts(b, ")");
    } else {
        st = hs_buf_puts(b, "(");
        if (st == HS_OK)
            gen_filter(b, f, sp, c, depth + 1);
        if (st == HS_OK)
            st = hs_buf_puts(b, rnd() & 1 ? ") AND (" : ") OR (");
        if (st == HS_OK)
            gen_filter(b, f, sp, c, depth + 1);
        if (st == HS_OK)
            st = hs_buf_puts(b, ")");
    }
    if (st != HS_OK)
        abort();
}

/* ---- oracle comparisons ---- */

static int64_t n_leaves, n_nonempty, n_filters_ok, n_filters_bad, n_all;

typedef struct ctx {
    const hs_field *schema;
    const hs_column *col;
    hs_batch batch;           /* borrows schema and col */
    hs_column *cols[1];
    uint8_t *sel;
    int64_t leaves, nonempty, leaves_all;
} ctx;

static void ctx_init(ctx *x, hs_field *schema, hs_column *col)
{
    memset(x, 0, sizeof *x);
    x->schema = schema;
    x->col = col;
    x->cols[0] = col;
    x->batch.schema = *schema;
    x->batch.n_rows = col->length;
    x->batch.n_cols = 1;
    x->batch.cols = x->cols;
    x->sel = hs_malloc((size_t)col->length + 1);
}

/* Checks leaf against the oracle for index ix; returns false on mismatch. */
static bool check_leaf(ctx *x, const pr_filter *flt, pr_expr *leaf, const sidx_index *ix,
                       const char *text)
{
    pr_filter one = *flt;
    one.root = leaf;
    int64_t m = 0;
    hs_error err = {0};
    if (pr_filter_eval(&one, &x->batch, x->sel, &m, &err) != HS_OK) {
        fprintf(stderr, "oracle failed: %s\n", err.msg);
        return false;
    }
    roaring_bitmap_t *bm = NULL;
    hs_status st = sidx_lookup(ix, leaf, &bm, &err);
    if (st != HS_OK) {
        fprintf(stderr, "lookup of a leaf of \"%s\" failed: %s\n", text, err.msg);
        return false;
    }
    x->leaves++;
    x->nonempty += m > 0;
    bool ok = roaring_bitmap_get_cardinality(bm) == (uint64_t)m;
    for (int64_t i = 0; i < x->col->length && ok; i++)
        if (x->sel[i] && !roaring_bitmap_contains(bm, (uint32_t)i))
            ok = false;
    sidx_info info;
    sidx_get_info(ix, &info);
    int64_t est = sidx_estimate(ix, leaf);
    if (est < 0 || est > info.n_rows)
        ok = false;
    bool exact = leaf->kind == PR_E_CMP && (leaf->op == PR_EQ || info.kind == SIDX_RANGE);
    if (exact && est != m) {
        fprintf(stderr, "estimate %lld, exact %lld\n", (long long)est, (long long)m);
        ok = false;
    }
    if (!ok)
        fprintf(stderr, "mismatch: %s leaf (kind %d op %d) of \"%s\": index %llu rows, oracle "
                "%lld\n", sidx_kind_name(info.kind), (int)leaf->kind, (int)leaf->op, text,
                (unsigned long long)roaring_bitmap_get_cardinality(bm), (long long)m);
    roaring_bitmap_free(bm);
    return ok;
}

static void gather_leaves(pr_expr *e, pr_expr **out, int *n, int cap)
{
    if (e->kind == PR_E_AND || e->kind == PR_E_OR) {
        gather_leaves(e->l, out, n, cap);
        gather_leaves(e->r, out, n, cap);
    } else if (*n < cap) {
        out[(*n)++] = e;
    }
}

/* sidx_lookup_all of a random subset of the filter's leaves against the AND
 * of the oracle's per-leaf results. */
static bool check_all(ctx *x, const pr_filter *flt, const sidx_index *ix, const char *text)
{
    pr_expr *leaves[16], *pick[16];
    int n = 0, m = 0;
    gather_leaves(flt->root, leaves, &n, 16);
    for (int k = 0; k < n; k++)
        if (rnd() % 3 != 0 || m == 0)
            pick[m++] = leaves[k];
    int64_t rows = x->col->length;
    uint8_t *all = hs_malloc((size_t)rows + 1);
    memset(all, 1, (size_t)rows + 1);
    hs_error err = {0};
    for (int k = 0; k < m; k++) {
        pr_filter one = *flt;
        one.root = pick[k];
        int64_t cnt;
        if (pr_filter_eval(&one, &x->batch, x->sel, &cnt, &err) != HS_OK) {
            hs_free(all);
            return false;
        }
        for (int64_t i = 0; i < rows; i++)
            all[i] &= x->sel[i];
    }
    roaring_bitmap_t *bm = NULL;
    bool ok = sidx_lookup_all(ix, (const pr_expr *const *)pick, m, &bm, &err) == HS_OK;
    int64_t want = 0;
    for (int64_t i = 0; i < rows && ok; i++) {
        want += all[i];
        if (all[i] && !roaring_bitmap_contains(bm, (uint32_t)i))
            ok = false;
    }
    if (ok && roaring_bitmap_get_cardinality(bm) != (uint64_t)want)
        ok = false;
    if (!ok)
        fprintf(stderr, "lookup_all mismatch: %d of the leaves of \"%s\" (%s): %s\n", m, text,
                err.msg, bm ? "wrong rows" : "failed");
    if (bm)
        roaring_bitmap_free(bm);
    hs_free(all);
    x->leaves_all++;
    return ok;
}

static bool check_tree(ctx *x, const pr_filter *flt, pr_expr *e, const sidx_index *ix,
                       const char *text)
{
    if (e->kind == PR_E_AND || e->kind == PR_E_OR)
        return check_tree(x, flt, e->l, ix, text) && check_tree(x, flt, e->r, ix, text);
    return check_leaf(x, flt, e, ix, text);
}

static int cmp_vals(const void *a, const void *b) { return pr_val_cmp(a, b); }

static int64_t oracle_distinct(const hs_field *f, const hs_column *c)
{
    pr_val *v = hs_malloc(sizeof *v * (size_t)(c->length + 1));
    int64_t n = 0, d = 0;
    for (int64_t i = 0; i < c->length; i++)
        if (pr_val_get(f, c, i, &v[n]))
            n++;
    qsort(v, (size_t)n, sizeof *v, cmp_vals);
    for (int64_t i = 0; i < n; i++)
        d += i == 0 || pr_val_cmp(&v[i - 1], &v[i]) != 0;
    hs_free(v);
    return d;
}

/* Builds an index of kind k over c in a few batches. */
static hs_status build(sidx_kind k, const hs_field *f, const hs_column *c, hs_buf *out,
                       sidx_kind *chosen, hs_error *err)
{
    sidx_builder *b = NULL;
    HS_TRY(sidx_builder_new(k, f, 123456, &b, err));
    if (rnd() & 1) /* sometimes leave the dictionary early (strings, decimals) */
        sidx_builder_set_dict_limit(b, (int64_t)rndn(20));
    int64_t at = 0;
    hs_status st = HS_OK;
    while (st == HS_OK && at < c->length) {
        int64_t n = 1 + (int64_t)rndn((uint64_t)c->length);
        if (n > c->length - at)
            n = c->length - at;
        hs_column *part = NULL;
        st = hs_col_slice(c, at, n, &part, err);
        if (st == HS_OK)
            st = sidx_builder_add(b, part, at, err);
        hs_col_free(part);
        at += n;
    }
    if (st == HS_OK)
        st = sidx_builder_finish(b, out, chosen, err);
    sidx_builder_free(b);
    return st;
}

/* Every kind over one column: info, and n_filters random filters. */
static void check_column(const spec *sp, int64_t n, card_mode mode, int null_pct, int n_filters)
{
    hs_field schema;
    make_schema(sp, &schema);
    const hs_field *f = &schema.children[0];
    hs_column *c = gen_column(f, sp, n, mode, null_pct);
    int64_t distinct = oracle_distinct(f, c);
    ctx x;
    ctx_init(&x, &schema, c);
    for (int k = 0; k < 3; k++) {
        hs_buf file = {0};
        hs_error err = {0};
        sidx_kind chosen = SIDX_AUTO;
        CHECK_OK(build((sidx_kind)k, f, c, &file, &chosen, &err), &err);
        sidx_kind want = (sidx_kind)k;
        if (k == SIDX_AUTO)
            want = sp->type == HS_TYPE_BOOL || distinct <= (n / 8 > 1024 ? n / 8 : 1024)
                 ? SIDX_INVERTED : SIDX_RANGE;
        CHECK(chosen == want);
        sidx_index *ix = NULL;
        CHECK_OK(sidx_open(file.data, file.len, f, &ix, &err), &err);
        sidx_info info;
        sidx_get_info(ix, &info);
        CHECK(info.kind == want && info.n_rows == n && info.n_nulls == c->null_count &&
              info.data_file_size == 123456 && info.value_kind == pr_kind_of(f));
        CHECK(info.n_distinct == (want == SIDX_INVERTED ? distinct : -1));
        int bad = 0;
        for (int q = 0; q < n_filters && bad < 3; q++) {
            hs_buf text = {0};
            if (rndn(4) == 0) { /* a range, as the planner sends prefixes */
                static const char *const lo_ops[] = {">=", ">"}, *const hi_ops[] = {"<", "<="};
                hs_status ts = hs_buf_printf(&text, "c %s ", lo_ops[rndn(2)]);
                put_literal(&text, f, sp, c);
                ts = ts == HS_OK ? hs_buf_printf(&text, " AND c %s ", hi_ops[rndn(2)]) : ts;
                put_literal(&text, f, sp, c);
                if (ts != HS_OK)
                    abort();
            } else {
                gen_filter(&text, f, sp, c, 0);
            }
            pr_filter *flt = NULL;
            hs_error ferr = {0};
            if (pr_filter_parse(hs_buf_cstr(&text), &flt, &ferr) == HS_OK &&
                pr_filter_bind(flt, &schema, &ferr) == HS_OK) {
                n_filters_ok++;
                if (!check_tree(&x, flt, flt->root, ix, hs_buf_cstr(&text)) ||
                    !check_all(&x, flt, ix, hs_buf_cstr(&text))) {
                    bad++;
                    fprintf(stderr, "  column %s, %lld rows, mode %d, nulls %d%%\n", sp->name,
                            (long long)n, (int)mode, null_pct);
                    CHECK(false);
                }
            } else {
                n_filters_bad++;
            }
            pr_filter_free(flt);
            hs_buf_free(&text);
        }
        sidx_close(ix);
        hs_buf_free(&file);
    }
    n_leaves += x.leaves;
    n_all += x.leaves_all;
    n_nonempty += x.nonempty;
    hs_free(x.sel);
    hs_col_free(c);
    hs_field_clear(&schema);
}

/* ---- tests ---- */

static void test_names(void)
{
    sidx_kind k;
    CHECK(sidx_kind_from_name("inverted", &k) && k == SIDX_INVERTED);
    CHECK(sidx_kind_from_name("range", &k) && k == SIDX_RANGE);
    CHECK(sidx_kind_from_name("auto", &k) && k == SIDX_AUTO);
    CHECK(!sidx_kind_from_name("btree", &k) && !sidx_kind_from_name(NULL, &k));
    CHECK(strcmp(sidx_kind_name(SIDX_RANGE), "range") == 0);
    hs_field a, l;
    hs_field_init(&a, "a", HS_TYPE_INT64, true);
    CHECK(sidx_supports(&a));
    hs_field_clear(&a);
    hs_field_init(&a, "e", HS_TYPE_INT64, true);
    hs_field_init_list(&l, "l", true, &a);
    CHECK(!sidx_supports(&l));
    hs_field_clear(&l);
}

/* Every type, cardinality and null rate, with many random filters. */
static void test_oracle_all_types(void)
{
    LEAK_START();
    rng_state = 42;
    for (int s = 0; s < N_SPECS; s++) {
        check_column(&SPECS[s], 500, CARD_LOW, 10, 60);
        check_column(&SPECS[s], 700, CARD_MID, 5, 60);
        check_column(&SPECS[s], 900, CARD_HIGH, 20, 60);
        check_column(&SPECS[s], 600, CARD_SORTED, 5, 30);
        if (SPECS[s].type == HS_TYPE_STRING || SPECS[s].type == HS_TYPE_BINARY)
            for (int rep = 0; rep < 4; rep++)
                check_column(&SPECS[s], 3000, CARD_PREFIX, 5, 40);
    }
    fprintf(stderr, "  %lld filters (%lld did not bind), %lld leaves checked, %lld with rows, "
            "%lld ANDs\n", (long long)n_filters_ok, (long long)n_filters_bad, (long long)n_leaves,
            (long long)n_nonempty, (long long)n_all);
    CHECK(n_leaves > 5000 && n_nonempty > n_leaves / 3 && n_filters_bad < n_filters_ok / 10);
    LEAK_END();
}

/* Edge shapes: no rows, one row, all null, one distinct value, no nulls. */
static void test_edges(void)
{
    LEAK_START();
    rng_state = 7;
    for (int s = 0; s < N_SPECS; s++) {
        check_column(&SPECS[s], 0, CARD_LOW, 0, 10);
        check_column(&SPECS[s], 1, CARD_LOW, 0, 20);
        check_column(&SPECS[s], 1, CARD_LOW, 100, 10);
        check_column(&SPECS[s], 50, CARD_LOW, 100, 20);
        check_column(&SPECS[s], 40, CARD_HIGH, 0, 20);
    }
    LEAK_END();
}

/* Many range blocks, with runs of duplicates that cross block edges. */
static void test_many_blocks(void)
{
    LEAK_START();
    rng_state = 99;
    static const int pick[] = {4, 8, 11, 14, 17, 12};
    for (int i = 0; i < (int)(sizeof pick / sizeof pick[0]); i++) {
        check_column(&SPECS[pick[i]], 20000, CARD_MID, 3, 40);
        check_column(&SPECS[pick[i]], 13000, CARD_HIGH, 3, 40);
        check_column(&SPECS[pick[i]], 9000, CARD_SORTED, 1, 30);
    }
    LEAK_END();
}

/* Hand-made leaves the parser would not produce. */
static void test_direct_leaves(void)
{
    LEAK_START();
    hs_field schema;
    make_schema(&SPECS[4], &schema); /* int64 */
    const hs_field *f = &schema.children[0];
    hs_column *c = NULL;
    CHECK_OK(hs_col_create(f, 10, &c, NULL), NULL);
    for (int64_t i = 0; i < 10; i++) {
        hs_status st = i == 3 ? hs_col_append_null(c) : hs_col_append_fixed(c, &i);
        CHECK(st == HS_OK);
    }
    for (int k = 1; k < 3; k++) {
        hs_buf file = {0};
        hs_error err = {0};
        CHECK_OK(build((sidx_kind)k, f, c, &file, NULL, &err), &err);
        sidx_index *ix = NULL;
        CHECK_OK(sidx_open(file.data, file.len, f, &ix, &err), &err);
        pr_val v[2];
        memset(v, 0, sizeof v);
        pr_expr e;
        memset(&e, 0, sizeof e);
        e.field = f;
        e.field_id = 7;
        e.vals = v;
        e.n_lits = 1;
        roaring_bitmap_t *bm = NULL;
        /* NaN literal against integers: only != holds (for every non-null row) */
        v[0].kind = PR_V_F64;
        v[0].f = NAN;
        e.kind = PR_E_CMP;
        for (int op = PR_EQ; op <= PR_GE; op++) {
            e.op = (pr_op)op;
            CHECK_OK(sidx_lookup(ix, &e, &bm, &err), &err);
            CHECK(roaring_bitmap_get_cardinality(bm) == (op == PR_NE ? 9u : 0u));
            roaring_bitmap_free(bm);
        }
        /* I128 literal against integers (scale 1: 45 = 4.5) */
        v[0].kind = PR_V_I128;
        v[0].d = 45;
        v[0].scale = 1;
        e.op = PR_GT;
        CHECK_OK(sidx_lookup(ix, &e, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 5 && !roaring_bitmap_contains(bm, 4));
        roaring_bitmap_free(bm);
        /* a bytes literal cannot be compared with integers */
        v[0].kind = PR_V_BYTES;
        v[0].p = (const uint8_t *)"x";
        v[0].n = 1;
        CHECK(sidx_lookup(ix, &e, &bm, &err) == HS_UNSUPPORTED && bm == NULL);
        /* IN () and NOT IN () */
        e.kind = PR_E_IN;
        e.n_lits = 0;
        CHECK_OK(sidx_lookup(ix, &e, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 0);
        roaring_bitmap_free(bm);
        e.kind = PR_E_NOT_IN;
        CHECK_OK(sidx_lookup(ix, &e, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 9 && !roaring_bitmap_contains(bm, 3));
        roaring_bitmap_free(bm);
        /* TRUE / FALSE / unsupported kinds / unbound leaves */
        e.kind = PR_E_TRUE;
        CHECK_OK(sidx_lookup(ix, &e, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 10);
        roaring_bitmap_free(bm);
        e.kind = PR_E_FALSE;
        CHECK_OK(sidx_lookup(ix, &e, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 0);
        roaring_bitmap_free(bm);
        e.kind = PR_E_AND;
        hs_err_clear(&err);
        CHECK(sidx_lookup(ix, &e, &bm, &err) == HS_UNSUPPORTED);
        CHECK(sidx_estimate(ix, &e) == 10);
        CHECK(sidx_lookup_all(ix, (const pr_expr *const[]){&e}, 1, &bm, NULL) == HS_UNSUPPORTED);
        e.kind = PR_E_CMP;
        e.n_lits = 1;
        e.vals = NULL;
        CHECK(sidx_lookup(ix, &e, &bm, NULL) == HS_INVALID);
        /* lookup_all: nothing = all rows; spans with IS NULL / NOT NULL / FALSE */
        CHECK_OK(sidx_lookup_all(ix, NULL, 0, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 10);
        roaring_bitmap_free(bm);
        pr_expr ge = e, lt = e, isnull = e, notnull = e, no = e;
        pr_val lv[2];
        memset(lv, 0, sizeof lv);
        lv[0].kind = lv[1].kind = PR_V_I64;
        lv[0].i = 2;
        lv[1].i = 6;
        ge.vals = &lv[0];
        ge.op = PR_GE;
        lt.vals = &lv[1];
        lt.op = PR_LT;
        isnull.kind = PR_E_IS_NULL;
        notnull.kind = PR_E_NOT_NULL;
        no.kind = PR_E_FALSE;
        CHECK_OK(sidx_lookup_all(ix, (const pr_expr *const[]){&ge, &lt, &notnull}, 3, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 3 && !roaring_bitmap_contains(bm, 3));
        roaring_bitmap_free(bm);
        CHECK_OK(sidx_lookup_all(ix, (const pr_expr *const[]){&ge, &isnull}, 2, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 0);
        roaring_bitmap_free(bm);
        CHECK_OK(sidx_lookup_all(ix, (const pr_expr *const[]){&isnull}, 1, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 1 && roaring_bitmap_contains(bm, 3));
        roaring_bitmap_free(bm);
        CHECK_OK(sidx_lookup_all(ix, (const pr_expr *const[]){&lt, &no}, 2, &bm, &err), &err);
        CHECK(roaring_bitmap_get_cardinality(bm) == 0);
        roaring_bitmap_free(bm);
        CHECK(sidx_estimate(ix, &ge) == 7 && sidx_estimate(ix, &lt) == 5);
        sidx_close(ix);
        hs_buf_free(&file);
    }
    hs_col_free(c);
    hs_field_clear(&schema);
    LEAK_END();
}

static void test_builder_misuse(void)
{
    LEAK_START();
    hs_field schema;
    make_schema(&SPECS[3], &schema); /* int32 */
    const hs_field *f = &schema.children[0];
    hs_column *c = NULL, *other = NULL;
    CHECK_OK(hs_col_create(f, 4, &c, NULL), NULL);
    int32_t v = 5;
    CHECK(hs_col_append_fixed(c, &v) == HS_OK && hs_col_append_fixed(c, &v) == HS_OK);
    hs_field g;
    hs_field_init(&g, "g", HS_TYPE_INT64, true);
    CHECK_OK(hs_col_create(&g, 1, &other, NULL), NULL);
    sidx_builder *b = NULL;
    hs_error err = {0};
    CHECK_OK(sidx_builder_new(SIDX_AUTO, f, 0, &b, &err), &err);
    CHECK(sidx_builder_add(b, c, 1, &err) == HS_INVALID);   /* gap */
    hs_err_clear(&err);
    CHECK(sidx_builder_add(b, other, 0, &err) == HS_INVALID); /* wrong type */
    hs_err_clear(&err);
    CHECK_OK(sidx_builder_add(b, c, 0, &err), &err);
    CHECK(sidx_builder_add(b, c, 0, &err) == HS_INVALID);   /* overlap */
    hs_err_clear(&err);
    CHECK_OK(sidx_builder_add(b, c, 2, &err), &err);
    hs_buf out = {0};
    CHECK(hs_buf_puts(&out, "prefix") == HS_OK);
    sidx_kind k;
    CHECK_OK(sidx_builder_finish(b, &out, &k, &err), &err);
    CHECK(k == SIDX_INVERTED);
    CHECK(sidx_builder_finish(b, &out, &k, &err) == HS_INVALID);
    hs_err_clear(&err);
    sidx_builder_free(b);
    sidx_builder_free(NULL);
    /* the file was appended after the prefix */
    sidx_index *ix = NULL;
    CHECK_OK(sidx_open(out.data + 6, out.len - 6, f, &ix, &err), &err);
    sidx_info info;
    sidx_get_info(ix, &info);
    CHECK(info.n_rows == 4 && info.n_distinct == 1 && info.data_file_size == 0);
    sidx_close(ix);
    sidx_close(NULL);
    /* opened as another value kind: corrupt */
    CHECK(sidx_open(out.data + 6, out.len - 6, &g, &ix, &err) == HS_OK); /* int64: also I64 */
    sidx_close(ix);
    hs_field h;
    hs_field_init(&h, "h", HS_TYPE_STRING, true);
    hs_err_clear(&err);
    CHECK(sidx_open(out.data + 6, out.len - 6, &h, &ix, &err) == HS_CORRUPT && ix == NULL);
    CHECK(strstr(err.msg, "value kind") != NULL);
    hs_field_clear(&h);
    /* unsupported column types */
    hs_field e, l;
    hs_field_init(&e, "e", HS_TYPE_INT64, true);
    hs_field_init_list(&l, "l", true, &e);
    hs_err_clear(&err);
    CHECK(sidx_builder_new(SIDX_RANGE, &l, 0, &b, &err) == HS_UNSUPPORTED && b == NULL);
    hs_field_clear(&l);
    hs_buf_free(&out);
    hs_col_free(c);
    hs_col_free(other);
    hs_field_clear(&g);
    hs_field_clear(&schema);
    LEAK_END();
}

/* Index files used by the corruption tests: strings and integers, both kinds. */
static void corrupt_inputs(hs_buf files[4], hs_field *schemas[4], hs_column *cols[4])
{
    static const int spec_of[4] = {17, 17, 4, 11};
    static const sidx_kind kind_of[4] = {SIDX_INVERTED, SIDX_RANGE, SIDX_INVERTED, SIDX_RANGE};
    for (int i = 0; i < 4; i++) {
        schemas[i] = hs_malloc(sizeof(hs_field));
        make_schema(&SPECS[spec_of[i]], schemas[i]);
        cols[i] = gen_column(&schemas[i]->children[0], &SPECS[spec_of[i]], i == 3 ? 4200 : 300,
                             i >= 2 ? CARD_LOW : CARD_MID, 10);
        memset(&files[i], 0, sizeof files[i]);
        if (build(kind_of[i], &schemas[i]->children[0], cols[i], &files[i], NULL, NULL) != HS_OK)
            abort();
    }
}

static void corrupt_free(hs_buf files[4], hs_field *schemas[4], hs_column *cols[4])
{
    for (int i = 0; i < 4; i++) {
        hs_buf_free(&files[i]);
        hs_col_free(cols[i]);
        hs_field_clear(schemas[i]);
        hs_free(schemas[i]);
    }
}

static void test_truncation_and_flips(void)
{
    LEAK_START();
    rng_state = 1234;
    hs_buf files[4];
    hs_field *schemas[4];
    hs_column *cols[4];
    corrupt_inputs(files, schemas, cols);
    int64_t wrong = 0;
    for (int i = 0; i < 4; i++) {
        const hs_field *f = &schemas[i]->children[0];
        size_t n = files[i].len;
        fprintf(stderr, "  file %d: %zu bytes\n", i, n);
        for (size_t len = 0; len < n; len++) {
            uint8_t *p = hs_malloc(len ? len : 1); /* exact size: ASan sees overreads */
            memcpy(p, files[i].data, len);
            sidx_index *ix = NULL;
            hs_error err = {0};
            if (sidx_open(p, len, f, &ix, &err) != HS_CORRUPT || ix != NULL || err.msg[0] == 0)
                wrong++;
            sidx_close(ix);
            hs_free(p);
        }
        uint8_t *p = hs_malloc(n);
        for (size_t at = 0; at < n; at++) {
            memcpy(p, files[i].data, n);
            p[at] ^= (uint8_t)(1u << rndn(8));
            sidx_index *ix = NULL;
            if (sidx_open(p, n, f, &ix, NULL) != HS_CORRUPT)
                wrong++;
            sidx_close(ix);
        }
        hs_free(p);
    }
    CHECK(wrong == 0);
    corrupt_free(files, schemas, cols);
    LEAK_END();
}

/* Damage inside the body with the checksum made valid again: open and every
 * lookup must fail with HS_CORRUPT or succeed with positions < n_rows. */
static void test_deep_corruption(void)
{
    LEAK_START();
    rng_state = 777;
    hs_buf files[4];
    hs_field *schemas[4];
    hs_column *cols[4];
    corrupt_inputs(files, schemas, cols);
    static const char *const filters[] = {
        "c = 'a'", "c < 'b'", "c >= ''", "c != 'zz'", "c IN ('a', 'c''')", "c NOT IN ('b')",
        "c IS NULL", "c IS NOT NULL", "c > -3", "c <= 5", "c = 0", "c > 'NaN'", "c = 1.5",
        "c NOT IN (1, 2)", "c <> 3",
    };
    int64_t opened = 0, bad = 0, lookups = 0;
    for (int i = 0; i < 4; i++) {
        const hs_field *f = &schemas[i]->children[0];
        size_t n = files[i].len;
        uint8_t *p = hs_malloc(n);
        for (int it = 0; it < 600; it++) {
            memcpy(p, files[i].data, n);
            int nmut = 1 + (int)rndn(3);
            for (int m = 0; m < nmut; m++) {
                size_t at = rndn(n - 12);
                if (rnd() & 1)
                    p[at] ^= (uint8_t)(1u << rndn(8));
                else
                    p[at] = (uint8_t)rnd();
            }
            uint64_t sum = hs_xxh64(p, n - 12, 0);
            memcpy(p + n - 12, &sum, 8);
            sidx_index *ix = NULL;
            hs_error err = {0};
            hs_status st = sidx_open(p, n, f, &ix, &err);
            if (st != HS_OK) {
                bad += st != HS_CORRUPT;
                continue;
            }
            opened++;
            sidx_info info;
            sidx_get_info(ix, &info);
            for (size_t q = 0; q < sizeof filters / sizeof filters[0]; q++) {
                pr_filter *flt = NULL;
                if (pr_filter_parse(filters[q], &flt, NULL) == HS_OK &&
                    pr_filter_bind(flt, schemas[i], NULL) == HS_OK) {
                    roaring_bitmap_t *bm = NULL;
                    hs_error lerr = {0};
                    st = sidx_lookup(ix, flt->root, &bm, &lerr);
                    lookups++;
                    if (st == HS_OK) {
                        uint64_t card = roaring_bitmap_get_cardinality(bm);
                        if (card && roaring_bitmap_maximum(bm) >= (uint64_t)info.n_rows)
                            bad++;
                        roaring_bitmap_free(bm);
                    } else if (st != HS_CORRUPT) {
                        bad++;
                    }
                    (void)sidx_estimate(ix, flt->root);
                }
                pr_filter_free(flt);
            }
            sidx_close(ix);
        }
        hs_free(p);
    }
    CHECK(bad == 0);
    CHECK(opened > 100 && lookups > 1000);
    corrupt_free(files, schemas, cols);
    LEAK_END();
}

/* Allocation failure at every step of build, open and lookup. */
static void test_alloc_failures(void)
{
    LEAK_START();
    rng_state = 4321;
    static const int spec_of[3] = {17, 12, 4};
    static const char *const text[3] = {"c NOT IN ('a', 'b') OR c > 'b'",
                                        "c NOT IN (1, 2) OR c > 0.5", "c NOT IN (1, 2) OR c > 3"};
    for (int s = 0; s < 3; s++) {
        hs_field schema;
        make_schema(&SPECS[spec_of[s]], &schema);
        const hs_field *f = &schema.children[0];
        hs_column *c = gen_column(f, &SPECS[spec_of[s]], 5000, CARD_MID, 10);
        for (int k = 1; k < 3; k++) {
            bool done = false;
            for (int64_t fail = 1; fail < 500 && !done; fail++) {
                int64_t live = hs_mem_live_count();
                hs_buf file = {0};
                hs_error err = {0};
                sidx_builder *b = NULL;
                hs_mem_fail_after(fail);
                hs_status st = sidx_builder_new((sidx_kind)k, f, 0, &b, &err);
                if (st == HS_OK)
                    st = sidx_builder_add(b, c, 0, &err);
                if (st == HS_OK)
                    st = sidx_builder_finish(b, &file, NULL, &err);
                sidx_builder_free(b);
                sidx_index *ix = NULL;
                if (st == HS_OK)
                    st = sidx_open(file.data, file.len, f, &ix, &err);
                pr_filter *flt = NULL;
                if (st == HS_OK)
                    st = pr_filter_parse(text[s], &flt, &err);
                if (st == HS_OK)
                    st = pr_filter_bind(flt, &schema, &err);
                roaring_bitmap_t *bm = NULL;
                if (st == HS_OK)
                    st = sidx_lookup(ix, flt->root->l, &bm, &err);
                hs_mem_fail_after(0);
                if (bm)
                    roaring_bitmap_free(bm);
                pr_filter_free(flt);
                sidx_close(ix);
                hs_buf_free(&file);
                CHECK(st == HS_OK || st == HS_NOMEM || (st == HS_INVALID && !flt));
                CHECK(hs_mem_live_count() == live);
                done = st == HS_OK;
            }
            CHECK(done);
        }
        hs_col_free(c);
        hs_field_clear(&schema);
    }
    LEAK_END();
}

/* Internals against their inputs: bit packing at every width, the
 * delta-packed list codec (and its rejection of bad bytes), and the
 * accumulator's three modes (buffered, dense, huge-file batches). */
/* sidx_roaring_of_sorted (the portable-format builder) against CRoaring's
 * own inserts: empty, single values, repeats, containers on both sides of
 * the 4096 array/bitset line, a full container, the top of the 32-bit
 * range, and input out of order (the value-by-value fallback). */
static void test_roaring_of_sorted(void)
{
    static const size_t sizes[] = {0, 1, 2, 4095, 4096, 4097, 9000, 65536, 200000};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        for (int shape = 0; shape < 4; shape++) {
            size_t m = sizes[si];
            uint32_t *v = hs_malloc((m + 1) * sizeof *v);
            REQUIRE(v);
            uint64_t x = shape == 3 ? 0xffffffffull - 3 * (uint64_t)m : (uint64_t)shape * 70000;
            for (size_t i = 0; i < m; i++) {
                v[i] = (uint32_t)x;
                /* dense runs, sparse gaps, repeats */
                uint64_t step = shape == 0 ? 1 : shape == 1 ? 1 + (i * 7919) % 37 : (i % 5 == 0) ? 0 : 3;
                if (shape == 3)
                    step = (i % 3 == 0) ? 0 : 1 + i % 4;
                if (x + step > 0xffffffffull)
                    step = 0;
                x += step;
            }
            roaring_bitmap_t *want = roaring_bitmap_of_ptr(m, v);
            roaring_bitmap_t *got = sidx_roaring_of_sorted(v, m);
            REQUIRE(want && got);
            CHECK(roaring_bitmap_equals(got, want));
            CHECK(roaring_bitmap_get_cardinality(got) == roaring_bitmap_get_cardinality(want));
            if (m > 3) {   /* out of order: still the same set */
                uint32_t t = v[0];
                v[0] = v[m - 1];
                v[m - 1] = t;
                roaring_bitmap_t *g2 = sidx_roaring_of_sorted(v, m);
                REQUIRE(g2);
                CHECK(roaring_bitmap_equals(g2, want));
                roaring_bitmap_free(g2);
            }
            roaring_bitmap_free(want);
            roaring_bitmap_free(got);
            hs_free(v);
        }
    }
}

static void test_internals(void)
{
    LEAK_START();
    rng_state = 31337;
    uint64_t v[300], back[300];
    for (int bits = 0; bits <= 64; bits++) {
        size_t n = 1 + rndn(300);
        for (size_t i = 0; i < n; i++)
            v[i] = bits == 64 ? rnd() : bits ? rnd() & ((1ull << bits) - 1) : 0;
        size_t sz = sidx_packed_size(n, bits);
        uint8_t *p = hs_calloc(sz ? sz : 1, 1);
        sidx_pack(p, v, n, bits);
        sidx_unpack(p, n, bits, back);
        CHECK(memcmp(v, back, n * 8) == 0);
        for (size_t i = 0; i < n; i++)
            CHECK(sidx_unpack1(p, i, bits) == v[i]);
        hs_free(p);
    }
    /* delta-packed lists */
    for (int rep = 0; rep < 50; rep++) {
        size_t n = 2 + rndn(1000);
        uint32_t *pos = hs_malloc(n * 4), *got = NULL;
        uint64_t cur = rndn(100);
        for (size_t i = 0; i < n; i++) {
            pos[i] = (uint32_t)cur;
            cur += 1 + (rep % 5 == 0 ? rndn(1u << 22) : rndn(40));
        }
        hs_buf b = {0};
        CHECK(sidx_dp_put(pos, n, &b) == HS_OK && b.len == sidx_dp_size(pos, n));
        size_t m = 0;
        hs_error err = {0};
        CHECK_OK(sidx_dp_decode(b.data, b.len, (uint64_t)pos[n - 1] + 1, &got, &m, &err), &err);
        CHECK(m == n && memcmp(got, pos, n * 4) == 0);
        hs_free(got);
        CHECK(sidx_dp_decode(b.data, b.len, pos[n - 1], &got, &m, NULL) == HS_CORRUPT);
        CHECK(sidx_dp_decode(b.data, b.len - 1, UINT32_MAX, &got, &m, NULL) == HS_CORRUPT);
        b.data[12] = 33; /* a block of 33 bits */
        CHECK(sidx_dp_decode(b.data, b.len, UINT32_MAX, &got, &m, NULL) == HS_CORRUPT);
        hs_buf_free(&b);
        hs_free(pos);
    }
    /* accumulator: random positions and a bitmap, in each mode */
    static const uint64_t rows[3] = {5000, 1000000, 1ull << 28};
    for (int k = 0; k < 3; k++) {
        sidx_acc acc;
        sidx_acc_init(&acc, rows[k]);
        roaring_bitmap_t *want = roaring_bitmap_create(), *got = NULL;
        int rounds = k == 2 ? 300 : 40;
        for (int r = 0; r < rounds; r++) {
            uint32_t batch[1000];
            for (int i = 0; i < 1000; i++)
                batch[i] = (uint32_t)rndn(rows[k]);
            roaring_bitmap_add_many(want, 1000, batch);
            CHECK(sidx_acc_add_pos(&acc, batch, 1000, NULL) == HS_OK);
        }
        roaring_bitmap_t *bm = roaring_bitmap_create();
        roaring_bitmap_add_range(bm, 100, 300);
        roaring_bitmap_or_inplace(want, bm);
        CHECK(sidx_acc_add_bitmap(&acc, bm, NULL) == HS_OK);
        CHECK(k != 1 || acc.dense != NULL);
        CHECK(k != 2 || (acc.dense == NULL && acc.r != NULL));
        CHECK(sidx_acc_finish(&acc, &got, NULL) == HS_OK);
        CHECK(got && roaring_bitmap_equals(got, want));
        roaring_bitmap_free(got);
        roaring_bitmap_free(want);
    }
    LEAK_END();
}

int main(void)
{
    HS_RUN(test_internals);
    HS_RUN(test_roaring_of_sorted);
    HS_RUN(test_names);
    HS_RUN(test_oracle_all_types);
    HS_RUN(test_edges);
    HS_RUN(test_many_blocks);
    HS_RUN(test_direct_leaves);
    HS_RUN(test_builder_misuse);
    HS_RUN(test_truncation_and_flips);
    HS_RUN(test_deep_corruption);
    HS_RUN(test_alloc_failures);
    return hs_test_summary();
}
