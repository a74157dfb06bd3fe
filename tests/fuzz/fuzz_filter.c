/* libFuzzer target: the input is filter text (untrusted: it arrives from API
 * callers and HTTP requests).  It is parsed and bound against a fixed schema;
 * when it binds, it is evaluated over a small batch, converted to the implied
 * pr_filter (which must keep every row the expression keeps, and exactly
 * those rows when it says it is exact), and formatted (the text must parse
 * again).  The fast parser (expr/expr_fastparse.h) sees the same text: what
 * it takes must bind to the same tree libpg_query's path binds (and a text
 * that path refuses it must not take).  Nothing may crash or leak. */
#include "base/mem.h"
#include "columnar/column.h"
#include "expr/expr.h"
#include "expr/expr_fastparse.h"
#include "../c/expr_same.h"
#include "expr/pred.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hs_field schema;
static hs_batch *batch;

static void add(hs_field *p, const char *name, hs_type t, int id)
{
    hs_field f;
    hs_field_init(&f, name, t, true);
    f.field_id = id;
    if (t == HS_TYPE_DECIMAL128) {
        f.precision = 9;
        f.scale = 2;
    }
    if (hs_field_add_child(p, &f) != HS_OK)
        abort();
}

#define OK(x)              \
    do {                   \
        if ((x) != HS_OK)  \
            abort();       \
    } while (0)

static void setup(void)
{
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    add(&schema, "id", HS_TYPE_INT64, 1);
    add(&schema, "i", HS_TYPE_INT32, 2);
    add(&schema, "d", HS_TYPE_FLOAT64, 3);
    add(&schema, "s", HS_TYPE_STRING, 4);
    add(&schema, "b", HS_TYPE_BOOL, 5);
    add(&schema, "dt", HS_TYPE_DATE32, 6);
    add(&schema, "ts", HS_TYPE_TIMESTAMP, 7);
    add(&schema, "dec", HS_TYPE_DECIMAL128, 8);
    hs_field st;
    hs_field_init(&st, "st", HS_TYPE_STRUCT, true);
    st.field_id = 9;
    add(&st, "a", HS_TYPE_INT64, 10);
    OK(hs_field_add_child(&schema, &st));
    add(&schema, "Mixed", HS_TYPE_FLOAT32, 11);
    /* keywords as column names: unreserved, col_name (both ColId, so the
     * fast parser takes them), reserved (only quoted) */
    add(&schema, "name", HS_TYPE_STRING, 12);
    add(&schema, "value", HS_TYPE_INT32, 13);
    add(&schema, "between", HS_TYPE_INT32, 14);
    add(&schema, "window", HS_TYPE_INT32, 15);
    OK(hs_batch_create(&schema, 16, &batch, NULL));
    static const char *const words[] = {"", "a", "abc", "\xc3\x84pfel", "zz", "a%b", "\xff"};
    for (int64_t r = 0; r < 16; r++) {
        bool nul = r % 5 == 4;
        int32_t i = (int32_t)(r * 7 % 11) - 5;
        double d = r == 3 ? NAN : r == 6 ? -0.0 : r == 7 ? INFINITY : (double)r / 4 - 1;
        uint8_t b = r % 2;
        int32_t dt = 19723 + (int32_t)r;
        int64_t ts = (19723 + r) * 86400000000LL + r * 3600000000LL;
        __int128 dec = r * 37 - 200;
        int64_t a = r - 8;
        float f = (float)r / 2;
        const char *w = words[r % 7];
        OK(hs_col_append_fixed(batch->cols[0], &r));
        OK(nul ? hs_col_append_null(batch->cols[1]) : hs_col_append_fixed(batch->cols[1], &i));
        OK(nul ? hs_col_append_null(batch->cols[2]) : hs_col_append_fixed(batch->cols[2], &d));
        OK(nul ? hs_col_append_null(batch->cols[3]) : hs_col_append_bytes(batch->cols[3], w, strlen(w)));
        OK(nul ? hs_col_append_null(batch->cols[4]) : hs_col_append_fixed(batch->cols[4], &b));
        OK(nul ? hs_col_append_null(batch->cols[5]) : hs_col_append_fixed(batch->cols[5], &dt));
        OK(nul ? hs_col_append_null(batch->cols[6]) : hs_col_append_fixed(batch->cols[6], &ts));
        OK(nul ? hs_col_append_null(batch->cols[7]) : hs_col_append_fixed(batch->cols[7], &dec));
        if (r % 7 == 3) {
            OK(hs_col_append_null(batch->cols[8]));
        } else {
            OK(hs_col_append_fixed(batch->cols[8]->children[0], &a));
            OK(hs_col_struct_append_valid(batch->cols[8]));
        }
        OK(nul ? hs_col_append_null(batch->cols[9]) : hs_col_append_fixed(batch->cols[9], &f));
        OK(nul ? hs_col_append_null(batch->cols[10]) : hs_col_append_bytes(batch->cols[10], w, strlen(w)));
        int32_t v = (int32_t)(r % 5) - 2, bt = (int32_t)(r * 3 % 7) - 3, wn = (int32_t)r - 8;
        OK(hs_col_append_fixed(batch->cols[11], &v));
        OK(nul ? hs_col_append_null(batch->cols[12]) : hs_col_append_fixed(batch->cols[12], &bt));
        OK(hs_col_append_fixed(batch->cols[13], &wn));
    }
    batch->n_rows = 16;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!batch)
        setup();
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* text stops at the first NUL, as for any C string */
    int64_t live = hs_mem_live_count();
    hs_error err = {0};
    ex_expr *e = NULL;
    hs_status st = ex_parse_filter(text, &schema, &e, &err);
    ex_expr *fast = NULL;
    if (ex_fastparse_filter(text, &schema, &fast, NULL) == HS_OK) {
        if (st != HS_OK || !same_expr(e, fast))
            abort(); /* the fast parser bound something else */
        uint8_t s1[16] = {0}, s2[16] = {0};
        int64_t m1 = -1, m2 = -2;
        hs_status r1 = ex_eval_filter(e, batch, NULL, s1, &m1, NULL);
        hs_status r2 = ex_eval_filter(fast, batch, NULL, s2, &m2, NULL);
        if (r1 != r2 || (r1 == HS_OK && (m1 != m2 || memcmp(s1, s2, sizeof s1) != 0)))
            abort();
    }
    ex_free(fast);
    if (st == HS_OK) {
        uint8_t sel[16], tsel[16];
        int64_t m, tm;
        if (ex_eval_filter(e, batch, NULL, sel, &m, &err) == HS_OK) {
            pr_filter *tf = NULL;
            bool exact;
            if (ex_to_pred(e, &tf, &exact, &err) != HS_OK)
                abort();
            if (pr_filter_eval(tf, batch, tsel, &tm, &err) != HS_OK)
                abort();
            for (int r = 0; r < 16; r++)
                if ((sel[r] && !tsel[r]) || (exact && sel[r] != tsel[r]))
                    abort(); /* the implied filter lost a row */
            pr_filter_free(tf);
        }
        char *fmt = NULL;
        if (ex_format(e, &fmt, &err) != HS_OK)
            abort();
        ex_expr *again = NULL;
        hs_error err2 = {0};
        if (size < 2000 && ex_parse_filter(fmt, &schema, &again, &err2) != HS_OK &&
            !strstr(err2.msg, "nested") && !strstr(err2.msg, "too many"))
            abort(); /* what ex_format prints must parse */
        ex_free(again);
        hs_free(fmt);
    }
    ex_free(e);
    if (hs_mem_live_count() != live)
        abort();
    free(text);
    return 0;
}
