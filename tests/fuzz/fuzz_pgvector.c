/* libFuzzer target: pgvector text input (expr/pgvector.h), untrusted text
 * from SQL literals and parameters.  The first byte picks the type (vector,
 * halfvec, sparsevec, bit) and a type modifier; the rest is the text.  A value
 * that parses must be a valid blob, print, parse back to the same bytes and
 * compare equal to itself; the operators and functions then run on it and
 * on its conversions.  Errors must carry a known SQLSTATE.  Nothing may
 * crash or leak. */
#include "base/arena.h"
#include "base/buf.h"
#include "expr/pgvector.h"

#include <stdlib.h>
#include <string.h>

#define OK(x)              \
    do {                   \
        if ((x) != HS_OK)  \
            abort();       \
    } while (0)

static void exercise(pv_type t, pv_val v, hs_arena *a)
{
    hs_error err = {0};
    pv_val r;
    double d;
    if (t == PV_BIT) {
        (void)pv_distance(t, PV_HAMMING, v, v, &d, &err);
        (void)pv_distance(t, PV_JACCARD, v, v, &d, &err);
        hs_err_clear(&err);
        (void)pv_arith(t, '|', v, v, a, &r, &err);
        return;
    }
    for (int k = PV_L2; k <= PV_L2_SQUARED; k++) {
        hs_err_clear(&err);
        if (pv_distance(t, (pv_dist)k, v, v, &d, &err) != HS_OK)
            abort(); /* same dimensions: cannot fail */
    }
    (void)pv_norm(t, v);
    hs_err_clear(&err);
    (void)pv_l2_normalize(t, v, a, &r, &err);
    for (int to = PV_VECTOR; to <= PV_SPARSEVEC; to++) {
        hs_err_clear(&err);
        if (pv_convert(t, (pv_type)to, v, -1, a, &r, &err) == HS_OK && !pv_valid((pv_type)to, r))
            abort();
    }
    if (t == PV_SPARSEVEC)
        return;
    static const int ops[] = {'+', '-', '*', '|'};
    for (int i = 0; i < 4; i++) {
        hs_err_clear(&err);
        (void)pv_arith(t, ops[i], v, v, a, &r, &err);
    }
    hs_err_clear(&err);
    if (pv_binary_quantize(t, v, a, &r, &err) != HS_OK || !pv_valid(PV_BIT, r))
        abort();
    hs_err_clear(&err);
    (void)pv_subvector(t, v, 2, 3, a, &r, &err);
    pv_agg g;
    pv_agg_init(&g, t, (pv_dims(t, v) & 1) != 0);
    hs_err_clear(&err);
    (void)pv_agg_add(&g, v, &err);
    hs_err_clear(&err);
    (void)pv_agg_add(&g, v, &err);
    bool is_null;
    hs_err_clear(&err);
    (void)pv_agg_final(&g, a, &r, &is_null, &err);
    pv_agg_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    pv_type t = (pv_type)(PV_VECTOR + (data[0] & 3));
    int32_t typmod = (data[0] >> 2) & 15 ? (int32_t)((data[0] >> 2) & 15) : -1;
    hs_arena a = {0};
    hs_error err = {0};
    pv_val v;
    if (pv_in(t, (const char *)data + 1, size - 1, t == PV_BIT ? -1 : typmod, &a, &v, &err) != HS_OK) {
        if (err.code != HS_NOMEM && strcmp(pv_sqlstate(err.msg), "XX000") == 0)
            abort(); /* every input error has its SQLSTATE */
        hs_arena_destroy(&a);
        return 0;
    }
    if (!pv_valid(t, v))
        abort();
    hs_buf b = {0};
    OK(pv_out(t, v, &b));
    pv_val v2;
    OK(pv_in(t, (const char *)b.data, b.len, -1, &a, &v2, &err));
    if (v2.n != v.n || memcmp(v2.p, v.p, v.n) != 0 || pv_cmp(t, v, v2) != 0)
        abort(); /* output reads back to the same value */
    hs_buf_free(&b);
    exercise(t, v, &a);
    hs_arena_destroy(&a);
    return 0;
}
