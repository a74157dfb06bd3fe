/*
 * parquet/stats.c - min/max/null-count accumulators for the Parquet writer.
 *
 * See stats.h for the orders.  The update loops are written per (order,
 * width) so that the compiler vectorises the fixed-width ones; byte values
 * track the best candidate by pointer inside one call and copy it into the
 * accumulator once at the end, so a run of n values costs n compares and at
 * most two copies.
 */
#include "parquet/stats.h"

#include <math.h>
#include <string.h>

void pq_wstats_reset(pq_wstats *s)
{
    s->has = false;
    s->null_count = 0;
    s->min.u = s->max.u = 0;
    hs_buf_reset(&s->bmin);
    hs_buf_reset(&s->bmax);
}

void pq_wstats_free(pq_wstats *s)
{
    hs_buf_free(&s->bmin);
    hs_buf_free(&s->bmax);
    memset(s, 0, sizeof *s);
}

double pq_half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp((double)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

uint16_t pq_double_to_half(double d)
{
    /* Only called with values that came from halves, so exact. */
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d))
        return 0x7e00;
    if (isinf(a))
        return sign | 0x7c00;
    if (a == 0)
        return sign;
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    int exp = e + 14;        /* biased exponent of the half */
    if (exp <= 0) {          /* subnormal: a = man * 2^-24 */
        return sign | (uint16_t)lrint(ldexp(a, 24));
    }
    uint16_t man = (uint16_t)(lrint(ldexp(m, 11)) - 0x400);
    return sign | (uint16_t)(exp << 10) | man;
}

static inline int cmp_bytes(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
    uint32_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Signed big-endian two's complement of equal or different lengths. */
static int cmp_decimal(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
    bool an = alen && (a[0] & 0x80), bn = blen && (b[0] & 0x80);
    if (an != bn)
        return an ? -1 : 1;
    if (alen == blen)
        return alen ? memcmp(a, b, alen) : 0;
    /* sign-extend the shorter one virtually */
    uint32_t n = alen > blen ? alen : blen;
    uint8_t ext = an ? 0xff : 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t x = i + alen >= n ? a[i + alen - n] : ext;
        uint8_t y = i + blen >= n ? b[i + blen - n] : ext;
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

static int cmp_order_bytes(pq_order order, const uint8_t *a, uint32_t alen, const uint8_t *b,
                           uint32_t blen)
{
    return order == PQ_ORD_DECIMAL ? cmp_decimal(a, alen, b, blen)
                                   : cmp_bytes(a, alen, b, blen);
}

static hs_status set_buf(hs_buf *b, const uint8_t *p, uint32_t len)
{
    hs_buf_reset(b);
    return hs_buf_append(b, p, len);
}

hs_status pq_wstats_update_one(pq_wstats *s, pq_order order, const uint8_t *p, uint32_t len)
{
    if (!s->has) {
        HS_TRY(set_buf(&s->bmin, p, len));
        HS_TRY(set_buf(&s->bmax, p, len));
        s->has = true;
        return HS_OK;
    }
    if (cmp_order_bytes(order, p, len, s->bmin.data, (uint32_t)s->bmin.len) < 0)
        HS_TRY(set_buf(&s->bmin, p, len));
    else if (cmp_order_bytes(order, p, len, s->bmax.data, (uint32_t)s->bmax.len) > 0)
        HS_TRY(set_buf(&s->bmax, p, len));
    return HS_OK;
}

hs_status pq_wstats_update_binary(pq_wstats *s, pq_order order, const int32_t *off,
                                  const uint8_t *data, int64_t n)
{
    if (n <= 0)
        return HS_OK;
    const uint8_t *minp, *maxp;
    uint32_t minl, maxl;
    int64_t i = 0;
    if (s->has) {
        minp = s->bmin.data; minl = (uint32_t)s->bmin.len;
        maxp = s->bmax.data; maxl = (uint32_t)s->bmax.len;
    } else {
        minp = maxp = data + off[0];
        minl = maxl = (uint32_t)(off[1] - off[0]);
        i = 1;
    }
    const uint8_t *min0 = s->has ? minp : NULL, *max0 = s->has ? maxp : NULL;
    for (; i < n; i++) {
        const uint8_t *p = data + off[i];
        uint32_t len = (uint32_t)(off[i + 1] - off[i]);
        if (cmp_bytes(p, len, minp, minl) < 0) {
            minp = p; minl = len;
        } else if (cmp_bytes(p, len, maxp, maxl) > 0) {
            maxp = p; maxl = len;
        }
    }
    s->has = true;
    if (minp != min0)
        HS_TRY(set_buf(&s->bmin, minp, minl));
    if (maxp != max0)
        HS_TRY(set_buf(&s->bmax, maxp, maxl));
    (void)order;
    return HS_OK;
}

#define MINMAX_LOOP(T, FIELD)                                                     \
    do {                                                                          \
        const T *v = (const T *)values;                                           \
        T mn = v[0], mx = v[0];                                                   \
        for (int64_t i = 1; i < n; i++) {                                         \
            T x = v[i];                                                           \
            mn = x < mn ? x : mn;                                                 \
            mx = x > mx ? x : mx;                                                 \
        }                                                                         \
        if (!s->has || mn < (T)s->min.FIELD) s->min.FIELD = mn;                   \
        if (!s->has || mx > (T)s->max.FIELD) s->max.FIELD = mx;                   \
        s->has = true;                                                            \
    } while (0)

#define FLOAT_LOOP(T)                                                             \
    do {                                                                          \
        const T *v = (const T *)values;                                           \
        T mn = (T)INFINITY, mx = (T)-INFINITY;                                    \
        int any = 0;                                                              \
        for (int64_t i = 0; i < n; i++) {                                         \
            T x = v[i];                                                           \
            any |= (x == x);                                                      \
            mn = x < mn ? x : mn;                                                 \
            mx = x > mx ? x : mx;                                                 \
        }                                                                         \
        if (any) {                                                                \
            if (!s->has || mn < s->min.d) s->min.d = mn;                          \
            if (!s->has || mx > s->max.d) s->max.d = mx;                          \
            s->has = true;                                                        \
        }                                                                         \
    } while (0)

hs_status pq_wstats_update_fixed(pq_wstats *s, pq_order order, pq_ptype type, int32_t width,
                                 const void *values, int64_t n)
{
    if (n <= 0 || order == PQ_ORD_NONE)
        return HS_OK;
    switch (type) {
    case PQ_INT32:
        if (order == PQ_ORD_UNSIGNED) MINMAX_LOOP(uint32_t, u);
        else MINMAX_LOOP(int32_t, i);
        return HS_OK;
    case PQ_INT64:
        if (order == PQ_ORD_UNSIGNED) MINMAX_LOOP(uint64_t, u);
        else MINMAX_LOOP(int64_t, i);
        return HS_OK;
    case PQ_FLOAT:
        FLOAT_LOOP(float);
        return HS_OK;
    case PQ_DOUBLE:
        FLOAT_LOOP(double);
        return HS_OK;
    default:
        break;
    }
    const uint8_t *p = values;
    if (order == PQ_ORD_FLOAT16) {
        for (int64_t i = 0; i < n; i++) {
            double x = pq_half_to_double((uint16_t)(p[2 * i] | (p[2 * i + 1] << 8)));
            if (x != x)
                continue;
            if (!s->has || x < s->min.d) s->min.d = x;
            if (!s->has || x > s->max.d) s->max.d = x;
            s->has = true;
        }
        return HS_OK;
    }
    /* FLBA: bytes or decimal order; track pointers, copy at the end */
    const uint8_t *minp = NULL, *maxp = NULL;
    int64_t i = 0;
    if (!s->has) {
        minp = maxp = p;
        i = 1;
    }
    for (; i < n; i++) {
        const uint8_t *x = p + (size_t)i * width;
        const uint8_t *cmin = minp ? minp : s->bmin.data;
        const uint8_t *cmax = maxp ? maxp : s->bmax.data;
        if (cmp_order_bytes(order, x, width, cmin, width) < 0)
            minp = x;
        else if (cmp_order_bytes(order, x, width, cmax, width) > 0)
            maxp = x;
    }
    s->has = true;
    if (minp)
        HS_TRY(set_buf(&s->bmin, minp, width));
    if (maxp)
        HS_TRY(set_buf(&s->bmax, maxp, width));
    return HS_OK;
}

void pq_wstats_update_bool(pq_wstats *s, const uint8_t *bits, int64_t bit_off, int64_t n)
{
    uint64_t any_true = 0, any_false = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t b = (bits[(bit_off + i) >> 3] >> ((bit_off + i) & 7)) & 1;
        any_true |= b;
        any_false |= b ^ 1;
        if (any_true && any_false)
            break;
    }
    if (n <= 0)
        return;
    uint64_t mn = any_false ? 0 : 1, mx = any_true ? 1 : 0;
    if (!s->has || mn < s->min.u) s->min.u = mn;
    if (!s->has || mx > s->max.u) s->max.u = mx;
    s->has = true;
}

hs_status pq_wstats_merge(pq_wstats *dst, const pq_wstats *src, pq_order order)
{
    dst->null_count += src->null_count;
    if (!src->has)
        return HS_OK;
    switch (order) {
    case PQ_ORD_NONE:
        return HS_OK;
    case PQ_ORD_BYTES:
    case PQ_ORD_DECIMAL:
        if (!dst->has) {
            HS_TRY(set_buf(&dst->bmin, src->bmin.data, (uint32_t)src->bmin.len));
            HS_TRY(set_buf(&dst->bmax, src->bmax.data, (uint32_t)src->bmax.len));
            dst->has = true;
            return HS_OK;
        }
        if (cmp_order_bytes(order, src->bmin.data, (uint32_t)src->bmin.len, dst->bmin.data,
                            (uint32_t)dst->bmin.len) < 0)
            HS_TRY(set_buf(&dst->bmin, src->bmin.data, (uint32_t)src->bmin.len));
        if (cmp_order_bytes(order, src->bmax.data, (uint32_t)src->bmax.len, dst->bmax.data,
                            (uint32_t)dst->bmax.len) > 0)
            HS_TRY(set_buf(&dst->bmax, src->bmax.data, (uint32_t)src->bmax.len));
        return HS_OK;
    case PQ_ORD_SIGNED:
        if (!dst->has || src->min.i < dst->min.i) dst->min.i = src->min.i;
        if (!dst->has || src->max.i > dst->max.i) dst->max.i = src->max.i;
        break;
    case PQ_ORD_UNSIGNED:
    case PQ_ORD_BOOL:
        if (!dst->has || src->min.u < dst->min.u) dst->min.u = src->min.u;
        if (!dst->has || src->max.u > dst->max.u) dst->max.u = src->max.u;
        break;
    case PQ_ORD_FLOAT:
    case PQ_ORD_FLOAT16:
        if (!dst->has || src->min.d < dst->min.d) dst->min.d = src->min.d;
        if (!dst->has || src->max.d > dst->max.d) dst->max.d = src->max.d;
        break;
    }
    dst->has = true;
    return HS_OK;
}

static hs_status put_fixed(hs_buf *out, pq_order order, pq_ptype type, pq_sval v, bool is_min)
{
    switch (type) {
    case PQ_BOOLEAN:
        return hs_buf_append_byte(out, (uint8_t)(v.u != 0));
    case PQ_INT32: {
        uint32_t x = order == PQ_ORD_UNSIGNED ? (uint32_t)v.u : (uint32_t)(int32_t)v.i;
        return hs_buf_put_u32le(out, x);
    }
    case PQ_INT64:
        return hs_buf_put_u64le(out, order == PQ_ORD_UNSIGNED ? v.u : (uint64_t)v.i);
    case PQ_FLOAT: {
        float f = (float)v.d;
        if (f == 0)
            f = is_min ? -0.0f : 0.0f;
        uint32_t x;
        memcpy(&x, &f, 4);
        return hs_buf_put_u32le(out, x);
    }
    case PQ_DOUBLE: {
        double d = v.d;
        if (d == 0)
            d = is_min ? -0.0 : 0.0;
        uint64_t x;
        memcpy(&x, &d, 8);
        return hs_buf_put_u64le(out, x);
    }
    case PQ_FIXED_LEN_BYTE_ARRAY: { /* float16 */
        double d = v.d;
        if (d == 0)
            d = is_min ? -0.0 : 0.0;
        uint16_t h = pq_double_to_half(d);
        uint8_t b[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
        return hs_buf_append(out, b, 2);
    }
    default:
        return HS_INTERNAL;
    }
}

hs_status pq_wstats_encode(const pq_wstats *s, pq_order order, pq_ptype type, int32_t width,
                           hs_buf *min_out, hs_buf *max_out, bool *has)
{
    *has = false;
    if (!s->has || order == PQ_ORD_NONE)
        return HS_OK;
    if (order == PQ_ORD_BYTES || order == PQ_ORD_DECIMAL) {
        HS_TRY(hs_buf_append(min_out, s->bmin.data, s->bmin.len));
        HS_TRY(hs_buf_append(max_out, s->bmax.data, s->bmax.len));
    } else {
        HS_TRY(put_fixed(min_out, order, type, s->min, true));
        HS_TRY(put_fixed(max_out, order, type, s->max, false));
    }
    *has = true;
    (void)width;
    return HS_OK;
}

static uint64_t load_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int pq_stat_cmp(pq_order order, pq_ptype type, const uint8_t *a, uint32_t alen,
                const uint8_t *b, uint32_t blen)
{
    switch (order) {
    case PQ_ORD_BYTES:
        return cmp_bytes(a, alen, b, blen);
    case PQ_ORD_DECIMAL:
        return cmp_decimal(a, alen, b, blen);
    case PQ_ORD_NONE:
        return 0;
    default:
        break;
    }
    int w = type == PQ_INT32 || type == PQ_FLOAT ? 4 : type == PQ_BOOLEAN ? 1
          : type == PQ_FIXED_LEN_BYTE_ARRAY ? 2 : 8;
    if (alen < (uint32_t)w || blen < (uint32_t)w)
        return cmp_bytes(a, alen, b, blen);
    uint64_t x = load_le(a, w), y = load_le(b, w);
    switch (order) {
    case PQ_ORD_SIGNED: {
        int64_t sx = w == 4 ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
        int64_t sy = w == 4 ? (int64_t)(int32_t)(uint32_t)y : (int64_t)y;
        return sx < sy ? -1 : sx > sy;
    }
    case PQ_ORD_UNSIGNED:
    case PQ_ORD_BOOL:
        return x < y ? -1 : x > y;
    case PQ_ORD_FLOAT:
    case PQ_ORD_FLOAT16: {
        double dx, dy;
        if (w == 4) {
            float fx, fy;
            uint32_t ux = (uint32_t)x, uy = (uint32_t)y;
            memcpy(&fx, &ux, 4);
            memcpy(&fy, &uy, 4);
            dx = fx; dy = fy;
        } else if (w == 8) {
            memcpy(&dx, &x, 8);
            memcpy(&dy, &y, 8);
        } else {
            dx = pq_half_to_double((uint16_t)x);
            dy = pq_half_to_double((uint16_t)y);
        }
        return dx < dy ? -1 : dx > dy;
    }
    default:
        return 0;
    }
}

uint32_t pq_truncate_min(uint32_t len, uint32_t limit)
{
    return len > limit ? limit : len;
}

uint32_t pq_truncate_max(uint8_t *max, uint32_t len, uint32_t limit)
{
    if (len <= limit)
        return len;
    for (int64_t i = (int64_t)limit - 1; i >= 0; i--) {
        if (max[i] != 0xff) {
            max[i]++;
            return (uint32_t)i + 1;
        }
    }
    return len;
}
