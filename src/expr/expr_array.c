/*
 * expr/expr_array.c - evaluation of the array functions over list columns.
 *
 * Owns: a[i], cardinality(a), array_length(a, 1), array_to_string,
 * array_position and `x op ANY/ALL (list)` (EX_FN_LIST_ANY) with
 * PostgreSQL's one-dimensional arrays (lower bound 1) and its NULL rules:
 * an element is read from the list's child column (read_elem), compared
 * with the comparison kernel of expr_eval.c (ex_cmp_rows).  ev_func in
 * expr_eval.c hands these functions to ex_ev_array_fn.
 */
#include "expr/expr_int.h"

#include "base/mem.h"
#include "columnar/jsonl.h"
#include "expr/pgvector.h"

#include <math.h>
#include <string.h>

/* Element i of a list's child column ch (field ef, of expression type t)
 * into row j of out; false when the element is null. */
static bool read_elem(const hs_column *ch, const ex_ty *t, int64_t i, ex_vec *out, int j)
{
    if (!hs_col_is_valid(ch, i))
        return false;
    const uint8_t *d = ch->values.data;
    switch (ch->type) {
    case HS_TYPE_BOOL: out->v.b[j] = hs_bit_get(d, i); return true;
    case HS_TYPE_INT8: out->v.i[j] = ((const int8_t *)d)[i]; return true;
    case HS_TYPE_INT16: out->v.i[j] = ((const int16_t *)d)[i]; return true;
    case HS_TYPE_INT32: out->v.i[j] = ((const int32_t *)d)[i]; return true;
    case HS_TYPE_INT64: case HS_TYPE_UINT64: out->v.i[j] = ((const int64_t *)d)[i]; return true;
    case HS_TYPE_UINT8: out->v.i[j] = d[i]; return true;
    case HS_TYPE_UINT16: out->v.i[j] = ((const uint16_t *)d)[i]; return true;
    case HS_TYPE_UINT32: out->v.i[j] = ((const uint32_t *)d)[i]; return true;
    case HS_TYPE_FLOAT16: out->v.f[j] = hs_half_to_float(((const uint16_t *)d)[i]); return true;
    case HS_TYPE_FLOAT32: out->v.f[j] = ((const float *)d)[i]; return true;
    case HS_TYPE_FLOAT64: out->v.f[j] = ((const double *)d)[i]; return true;
    case HS_TYPE_DECIMAL128: case HS_TYPE_INTERVAL: memcpy(&out->v.d[j], d + 16 * i, 16); return true;
    case HS_TYPE_DATE32: case HS_TYPE_TIME32: out->v.i[j] = ((const int32_t *)d)[i]; return true;
    case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP: out->v.i[j] = ((const int64_t *)d)[i]; return true;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *o = HS_COL_OFFSETS(ch);
        out->v.s[j].p = d + o[i];
        out->v.s[j].n = (size_t)(o[i + 1] - o[i]);
        return true;
    }
    case HS_TYPE_FIXED_BINARY:
        out->v.s[j].p = d + (size_t)ch->width * (size_t)i;
        out->v.s[j].n = (size_t)ch->width;
        return true;
    default:
        (void)t;
        return false;
    }
}

/* One value of type t against another (array_position: IS NOT DISTINCT
 * FROM, both non-null). */
static bool same_value(const ex_ty *t, const ex_vec *a, int j, const ex_ty *tb, const ex_vec *b, int k)
{
    ex_cmode m = t->t == EX_T_FLOAT ? EX_CM_F64 : t->t == EX_T_DEC ? EX_CM_DEC
               : t->t == EX_T_STR || t->t == EX_T_BIN ? EX_CM_BYTES
               : t->t == EX_T_BOOL ? EX_CM_BOOL : EX_CM_I64;
    return ex_cmp_rows(m, t, a, tb, b, j, k) == 0;
}

/* The elements [start, start + len) of ch (of type et), read one at a
 * time through tmp's row 0: ex_array_join's element text. */
typedef struct list_elems {
    const hs_column *ch;
    int64_t start;
    const ex_ty *et;
    ex_vec *tmp;
} list_elems;

static hs_status list_elem_text(ex_ctx *c, void *ctx, int64_t i, bool *valid, ex_str *s)
{
    const list_elems *le = ctx;
    *valid = read_elem(le->ch, le->et, le->start + i, le->tmp, 0);
    if (!*valid)
        return HS_OK;
    if (le->et->t == EX_T_BOOL) {   /* boolout: t / f */
        s->p = (const uint8_t *)(le->tmp->v.b[0] ? "t" : "f");
        s->n = 1;
        return HS_OK;
    }
    return ex_to_text(c, le->et, le->tmp, 0, s);
}

/* array_to_string (into out's row j) or array_position of the elements
 * [start, start + len) of ch (of type et), one at a time through tmp's row
 * 0.  x: the separator or the value searched; more: the null text or the
 * start position. */
static hs_status array_scan(ex_ctx *c, const ex_node *n, const hs_column *ch, int64_t start,
                            int64_t len, const ex_vec *x, const ex_vec *more, int j, const ex_ty *et,
                            ex_vec *tmp, ex_vec *out)
{
    bool has_more = n->n_args > 2 && !more->nul[j];
    if (n->op == EX_FN_ARRAY_POSITION) {
        int64_t from = 1;
        if (n->n_args > 2) {
            if (more->nul[j])
                return ex_fail(c, n, "initial position must not be null");
            from = more->v.i[j] < 1 ? 1 : more->v.i[j];
        }
        for (int64_t i = from - 1; i < len; i++) {
            bool nul = !read_elem(ch, et, start + i, tmp, 0);
            if (nul ? x->nul[j] : !x->nul[j] && same_value(et, tmp, 0, &n->args[1]->type, x, j)) {
                out->nul[j] = 0;
                out->v.i[j] = i + 1;
                return HS_OK;
            }
        }
        return HS_OK;
    }
    list_elems le = {ch, start, et, tmp};
    return ex_array_join(c, len, list_elem_text, &le, &x->v.s[j], has_more ? &more->v.s[j] : NULL,
                         out, j);
}

hs_status ex_array_join(ex_ctx *c, int64_t len, ex_elem_text_fn fn, void *ctx,
                        const ex_str *sep, const ex_str *null_text, ex_vec *out, int j)
{
    hs_buf b = {0};
    hs_status st = HS_OK;
    bool printed = false;
    for (int64_t i = 0; i < len && st == HS_OK; i++) {
        ex_str s;
        bool valid;
        if ((st = fn(c, ctx, i, &valid, &s)) != HS_OK)
            break;
        if (!valid) {
            if (!null_text)
                continue;
            s = *null_text;
        }
        if (printed)
            st = hs_buf_append(&b, sep->p, sep->n);
        if (st == HS_OK && s.n)
            st = hs_buf_append(&b, s.p, s.n);
        printed = true;
    }
    if (st == HS_OK)
        st = ex_put_str(c, &out->v.s[j], b.len ? (const char *)b.data : "", b.len);
    else if (st == HS_NOMEM)
        st = hs_err_nomem(c->err, b.len);
    hs_buf_free(&b);
    out->nul[j] = st != HS_OK;
    return st;
}

/* x op ANY / ALL (a) over the elements [start, start + len) of ch (of
 * type et) into out's row j (see bind_any_all in expr_bind.c). */
static void list_any(const ex_node *n, const hs_column *ch, int64_t start, int64_t len, const ex_vec *x,
                     int j, const ex_ty *et, ex_vec *tmp, ex_vec *out)
{
    bool all = n->neg, saw_null = false;
    ex_cmode m = et->t == EX_T_FLOAT ? EX_CM_F64 : et->t == EX_T_DEC ? EX_CM_DEC
               : et->t == EX_T_STR || et->t == EX_T_BIN ? EX_CM_BYTES
               : et->t == EX_T_BOOL ? EX_CM_BOOL : EX_CM_I64;
    for (int64_t i = 0; i < len; i++) {
        if (x->nul[j] || !read_elem(ch, et, start + i, tmp, 0)) {
            saw_null = true;
            continue;
        }
        int c = ex_cmp_rows(m, et, tmp, &n->args[1]->type, x, 0, j);   /* elem vs x */
        bool r = ex_cmp_res(n->aux, c < 0 ? 1 : c > 0 ? -1 : 0);        /* x op elem */
        if (r != all) {   /* ANY: a true one decides; ALL: a false one */
            out->nul[j] = 0;
            out->v.b[j] = r;
            return;
        }
    }
    out->nul[j] = saw_null;
    out->v.b[j] = all;
}

/* cardinality(a) and array_length(a, dim) of an array value (ARRAY[...],
 * '{...}'::int[]: pgvector.h's blob: int32 n, int32 flags, ...). */
static hs_status array_value_len(ex_ctx *c, const ex_node *n, const ex_vec *ix, const ex_sel *sel,
                                 int ns, ex_vec *out)
{
    ex_vec a;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->nul[j] = 1;
        if (a.nul[j] || (n->n_args > 1 && ix->nul[j]))
            continue;
        const ex_str *s = &a.v.s[j];
        int32_t len, flags;
        if (s->n < 8)
            return ex_fail(c, n, "malformed array value");
        memcpy(&len, s->p, 4);
        memcpy(&flags, s->p + 4, 4);
        int32_t dims[PV_ARR_MAXDIM];
        int nd = pv_arr_dims((pv_val){s->p, s->n}, dims);
        (void)flags;
        if (n->op == EX_FN_ARRAY_LENGTH && (ix->v.i[j] < 1 || ix->v.i[j] > nd))
            continue; /* PostgreSQL: an empty array has no dimensions */
        out->nul[j] = 0;
        out->v.i[j] = n->op == EX_FN_ARRAY_LENGTH ? dims[ix->v.i[j] - 1] : len;
    }
    return HS_OK;
}

/* a[i], cardinality(a), array_length(a, dim) of a list column (args[0]):
 * PostgreSQL's one-dimensional arrays with lower bound 1. */
hs_status ex_ev_array_fn(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_fn fn = (ex_fn)n->op;
    if (ex_is_ta(&n->args[0]->type))   /* a text[] value: expr_textarr.c */
        return ex_ev_ta_fn(c, n, sel, ns, out);
    ex_vec ix = {0};
    if (n->n_args > 1)
        HS_TRY(ex_ev(c, n->args[1], sel, ns, &ix));
    if (n->args[0]->type.t == EX_T_ARRAY)
        return array_value_len(c, n, &ix, sel, ns, out);
    const pr_col_ref *r;
    HS_TRY(ex_col_ref(c, n->args[0], &r));
    const hs_column *col = r ? r->col : NULL;
    bool fixed = col && col->type == HS_TYPE_FIXED_LIST;
    if (col && ((col->type != HS_TYPE_LIST && !fixed) || col->n_children != 1 || !col->children[0]))
        return ex_fail(c, n, "column \"%s\" is %s in the batch, not a list", n->args[0]->name,
                    hs_type_name(col->type));
    const hs_column *ch = col ? col->children[0] : NULL;
    const int32_t *o = col && !fixed ? HS_COL_OFFSETS(col) : NULL;
    /* array_to_string's null text, array_position's start; the elements'
     * type and one element at a time (array_scan) */
    ex_vec more = {0}, tmp = {0};
    ex_ty et = {0};
    if (fn == EX_FN_ARRAY_TO_STRING || fn == EX_FN_ARRAY_POSITION || fn == EX_FN_LIST_ANY) {
        if (n->n_args > 2)
            HS_TRY(ex_ev(c, n->args[2], sel, ns, &more));
        et = ex_type_of_field(&n->args[0]->field->children[0]);
        HS_TRY(ex_vec_new(c, et.t, &tmp));
    }
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        int64_t row = c->base + j;
        out->nul[j] = 1;
        bool ix_null = n->n_args > 1 && ix.nul[j] && fn != EX_FN_ARRAY_POSITION && fn != EX_FN_LIST_ANY;
        if (!col || !pr_ref_valid(r, row) || ix_null)
            continue;
        int64_t start = fixed ? row * col->width : o[row];
        int64_t len = fixed ? col->width : o[row + 1] - o[row];
        if (fn == EX_FN_ARRAY_TO_STRING || fn == EX_FN_ARRAY_POSITION || fn == EX_FN_LIST_ANY) {
            if (start + len > ch->length)
                return ex_fail(c, n, "column \"%s\": list offsets past its elements", n->args[0]->name);
            if (fn == EX_FN_LIST_ANY) {
                list_any(n, ch, start, len, &ix, j, &et, &tmp, out);
                continue;
            }
            HS_TRY(array_scan(c, n, ch, start, len, &ix, &more, j, &et, &tmp, out));
            continue;
        }
        if (fn == EX_FN_CARDINALITY || fn == EX_FN_ARRAY_LENGTH) {
            if (fn == EX_FN_ARRAY_LENGTH && (len == 0 || ix.v.i[j] != 1))
                continue; /* PostgreSQL: an empty array has no dimensions */
            out->nul[j] = 0;
            out->v.i[j] = len;
            continue;
        }
        int64_t i = ix.v.i[j];
        if (i < 1 || i > len || start + i - 1 >= ch->length)
            continue;
        out->nul[j] = !read_elem(ch, &n->type, start + i - 1, out, j);
    }
    return HS_OK;
}
