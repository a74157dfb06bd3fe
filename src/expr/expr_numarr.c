/*
 * expr/expr_numarr.c - array_append, array_prepend, array_cat and || over
 * the numeric arrays (integer[], real[], double precision[], numeric[]: the
 * pv_arr blobs of expr/pgvector.h) and over list columns of numbers
 * (list<int8..int32> as integer[], list<double> as double precision[];
 * list<float> columns are vectors, expr_pgvector.c).
 *
 * Types are PostgreSQL 15's anycompatible resolution: the result's element
 * is the common type of the operands' elements (integer < bigint < numeric
 * < real < double precision, each implicitly castable to the next), so
 * ARRAY[1,2] || 2.5 is numeric[], ARRAY[1] || 1.5::real is real[] and
 * ARRAY[1] || 3000000000 bigint[] (list<int64> columns are bigint[]; an
 * element past 2^53 is pgvector.h's PV_INT8_MSG error, never rounded).
 *
 * Binding: array_append(a, x) is a || ARRAY[x], array_prepend(x, a) is
 * ARRAY[x] || a (ARRAY[NULL] appends a NULL element), both operands cast to
 * the common kind; EX_FN_NA_CAT concatenates with array_cat's NULL rules
 * (a NULL array is the other one; both NULL: NULL).  `array || 'literal'`
 * reads the literal as an array, as PostgreSQL does.
 */
#include "expr/expr_int.h"

#include <string.h>
#include <strings.h>

/* ranks of the common-type order */
enum { R_INT4 = 0, R_BIGINT, R_NUMERIC, R_FLOAT4, R_FLOAT8, R_NONE = -1 };

static const pv_elem RANK_ELEM[] = {PV_E_INT4, PV_E_INT8, PV_E_NUMERIC, PV_E_FLOAT4, PV_E_FLOAT8};

static int elem_rank(pv_elem e)
{
    switch (e) {
    case PV_E_INT4: return R_INT4;
    case PV_E_INT8: return R_BIGINT;
    case PV_E_NUMERIC: return R_NUMERIC;
    case PV_E_FLOAT4: return R_FLOAT4;
    case PV_E_FLOAT8: return R_FLOAT8;
    case PV_E_TEXT: return R_NONE;
    }
    return R_NONE;
}

/* The element rank of a list column of numbers, R_NONE for other columns. */
static int list_rank(const ex_node *x)
{
    if (x->kind != EX_COL || x->type.t != EX_T_OTHER || !x->field ||
        (x->field->type != HS_TYPE_LIST && x->field->type != HS_TYPE_FIXED_LIST) ||
        x->field->n_children != 1)
        return R_NONE;
    switch (x->field->children[0].type) {
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_UINT8: case HS_TYPE_UINT16:
        return R_INT4;
    case HS_TYPE_INT64: case HS_TYPE_UINT32: case HS_TYPE_UINT64:
        return R_BIGINT;
    case HS_TYPE_FLOAT64:
        return R_FLOAT8;
    default:
        return R_NONE;
    }
}

/* The element rank of a numeric array value or list column, R_NONE else. */
static int arr_rank(const ex_node *x)
{
    if (x->type.t == EX_T_ARRAY)
        return elem_rank((pv_elem)x->type.elem);
    return list_rank(x);
}

/* The rank of a scalar of x's type, R_NONE for non-numbers. */
static int scalar_rank(const ex_node *x)
{
    switch (x->type.t) {
    case EX_T_INT: return x->type.bits > 32 ? R_BIGINT : R_INT4;
    case EX_T_DEC: return R_NUMERIC;
    case EX_T_FLOAT: return x->type.bits == 32 ? R_FLOAT4 : R_FLOAT8;
    default: return R_NONE;
    }
}

bool exb_na_is(const ex_node *x)
{
    return arr_rank(x) != R_NONE;
}

static ex_ty arr_ty(int rank)
{
    ex_ty t = exb_ty(EX_T_ARRAY);
    t.elem = (int8_t)RANK_ELEM[rank];
    return t;
}

static bool untyped(const ex_node *x)
{
    return x->type.t == EX_T_UNKNOWN || x->type.t == EX_T_NULL;
}

/* *np (a numeric array, a list column of numbers, an unknown literal or
 * NULL) as an array of rank's kind. */
static hs_status to_arr(ex_binder *b, ex_node **np, int rank)
{
    ex_node *x = *np;
    if (untyped(x))
        return exb_cast_to(b, np, arr_ty(rank), true);
    int r = arr_rank(x);
    if (x->type.t != EX_T_ARRAY) {   /* a list column: its own kind first */
        ex_node *n = exb_mk(b, EX_FUNC, arr_ty(r), x->loc, 1);
        if (!n)
            return exb_nomem(b);
        n->op = EX_FN_NA_OF_LIST;
        n->args[0] = x;
        *np = x = n;
    }
    return r == rank ? HS_OK : exb_cast_to(b, np, arr_ty(rank), false);
}

/* ARRAY[x] of rank's kind (x: a number, an unknown literal or NULL; a
 * literal of a numeric[] is read by numeric's input, with its scale). */
static hs_status one_elem(ex_binder *b, ex_node *x, int rank, int loc, ex_node **out)
{
    ex_ty st = rank == R_INT4 || rank == R_BIGINT ? exb_ty(EX_T_INT) : rank == R_NUMERIC ? exb_ty(EX_T_DEC)
                                                                       : exb_ty(EX_T_FLOAT);
    if (rank == R_INT4)
        st.bits = 32;
    if (rank == R_FLOAT4)
        st.bits = 32;
    if (rank == R_NUMERIC)   /* the array kernel reads INT, DEC and text as numeric */
        st = x->type.t == EX_T_DEC || x->type.t == EX_T_INT ? x->type : exb_ty(EX_T_STR);
    if (x->type.t == EX_T_NULL) {
        st = exb_ty(EX_T_NULL);
    } else if (x->type.t != st.t || (st.t == EX_T_FLOAT && x->type.bits != st.bits)) {
        HS_TRY(exb_cast_to(b, &x, st, x->type.t == EX_T_UNKNOWN));
    }
    ex_node *n = exb_mk(b, EX_FUNC, arr_ty(rank), x->loc >= 0 ? x->loc : loc, 1);
    if (!n)
        return exb_nomem(b);
    n->op = EX_FN_PV_ARRAY;
    n->args[0] = x;
    *out = n;
    return HS_OK;
}

static hs_status mk_cat(ex_binder *b, ex_node *l, ex_node *r, int rank, int loc, ex_node **out)
{
    ex_node *n = exb_mk(b, EX_FUNC, arr_ty(rank), loc, 2);
    if (!n)
        return exb_nomem(b);
    n->op = EX_FN_NA_CAT;
    n->args[0] = l;
    n->args[1] = r;
    *out = n;
    return exb_fold(b, out, false);
}

static hs_status no_match(ex_binder *b, const char *fn, bool op, ex_node *l, ex_node *r, int loc)
{
    char b1[48], b2[48];
    if (op)
        return exb_err(b, HS_NOT_FOUND, loc, "operator does not exist: %s || %s", exb_tname(&l->type, b1),
                       exb_tname(&r->type, b2));
    return exb_err(b, HS_NOT_FOUND, loc, "function %s(%s, %s) does not exist", fn, exb_tname(&l->type, b1),
                   exb_tname(&r->type, b2));
}

/* Binds l || r, array_cat(l, r) (kind 0), array_append(l, r) (kind 1) or
 * array_prepend(l, r) (kind 2) where one side is a numeric array. */
static hs_status bind_cat(ex_binder *b, const char *fn, int kind, ex_node *l, ex_node *r, int loc,
                          ex_node **out)
{
    bool op = fn == NULL;
    int la = arr_rank(l), ra = arr_rank(r);
    if (op) {   /* || : array || array, array || elem, elem || array */
        if (la != R_NONE && (ra != R_NONE || untyped(r)))
            kind = 0;
        else if (ra != R_NONE && untyped(l))
            kind = 0;
        else if (la != R_NONE && scalar_rank(r) != R_NONE)
            kind = 1;
        else if (ra != R_NONE && scalar_rank(l) != R_NONE)
            kind = 2;
        else
            return no_match(b, fn, op, l, r, loc);
    }
    ex_node *arr = kind == 2 ? r : l, *other = kind == 2 ? l : r;
    int ar = arr_rank(arr), orank;
    if (kind == 0) {
        if ((ar == R_NONE && !untyped(arr)) || (arr_rank(other) == R_NONE && !untyped(other)))
            return no_match(b, fn ? fn : "array_cat", op, l, r, loc);
        orank = arr_rank(other);
        if (ar == R_NONE)
            ar = orank;
    } else {
        if (ar == R_NONE && untyped(arr))
            ar = scalar_rank(other);
        orank = untyped(other) ? ar : scalar_rank(other);
        if (ar == R_NONE || orank == R_NONE)
            return no_match(b, fn, op, l, r, loc);
    }
    int rank = orank > ar ? orank : ar;
    HS_TRY(to_arr(b, &arr, rank));
    if (kind == 0)
        HS_TRY(to_arr(b, &other, rank));
    else
        HS_TRY(one_elem(b, other, rank, loc, &other));
    return kind == 2 ? mk_cat(b, other, arr, rank, loc, out) : mk_cat(b, arr, other, rank, loc, out);
}

hs_status exb_na_op(ex_binder *b, ex_node *l, ex_node *r, int loc, ex_node **out)
{
    return bind_cat(b, NULL, 0, l, r, loc, out);
}

hs_status exb_na_func(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n, int loc, bool *done,
                      ex_node **out)
{
    *done = false;
    if ((f != EX_FN_TA_APPEND && f != EX_FN_TA_CAT) || n != 2)
        return HS_OK;
    bool pre = f == EX_FN_TA_APPEND && !strcasecmp(fn, "array_prepend");
    const ex_node *arr = pre ? a[1] : a[0];
    bool numeric = exb_na_is(arr) || (f == EX_FN_TA_CAT && exb_na_is(a[1]) && !exb_ta_is(a[0])) ||
                   (f == EX_FN_TA_APPEND && untyped(arr) && scalar_rank(pre ? a[0] : a[1]) != R_NONE);
    if (!numeric)
        return HS_OK;
    *done = true;
    return bind_cat(b, fn, f == EX_FN_TA_CAT ? 0 : pre ? 2 : 1, a[0], a[1], loc, out);
}

/* ------------------------------------------------------------------ */
/* evaluation                                                          */

static hs_status na_fail(ex_ctx *c, const ex_node *n, const hs_error *e)
{
    if (e->code == HS_NOMEM)
        return hs_err_nomem(c->err, 0);
    if (e->code == HS_UNSUPPORTED)
        return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc, "%s", e->msg);
    return ex_fail(c, n, "%s", e->msg);
}

/* Row `row` of a list column of numbers as an array (of its own kind). */
static hs_status list_row(ex_ctx *c, const ex_node *n, const hs_column *col, int64_t row, ex_str *out)
{
    bool fixed = col->type == HS_TYPE_FIXED_LIST;
    const hs_column *ch = col->children[0];
    int64_t start = fixed ? row * col->width : HS_COL_OFFSETS(col)[row];
    int64_t end = fixed ? start + col->width : HS_COL_OFFSETS(col)[row + 1];
    if (start < 0 || end < start || end > ch->length)
        return ex_fail(c, n, "column \"%s\": list offsets past its elements", n->args[0]->name);
    hs_error e = {0};
    pv_val r;
    double *d;
    float *f;
    uint8_t *nul;
    if (pv_arr_new(c->arena, end - start, &r, &d, &f, &nul, &e) != HS_OK)
        return na_fail(c, n, &e);
    int32_t flags = 0;
    const uint8_t *v = ch->values.data;
    for (int64_t i = start; i < end; i++) {
        int64_t k = i - start;
        if (!hs_col_is_valid(ch, i)) {
            nul[k] = 1;
            flags |= PV_ARR_HAS_NULL;
            continue;
        }
        double x;
        int64_t w = 0;
        switch (ch->type) {
        case HS_TYPE_INT8: x = ((const int8_t *)v)[i]; break;
        case HS_TYPE_INT16: x = ((const int16_t *)v)[i]; break;
        case HS_TYPE_INT32: x = ((const int32_t *)v)[i]; break;
        case HS_TYPE_UINT8: x = v[i]; break;
        case HS_TYPE_UINT16: x = ((const uint16_t *)v)[i]; break;
        case HS_TYPE_UINT32: x = (double)((const uint32_t *)v)[i]; break;
        case HS_TYPE_INT64: case HS_TYPE_UINT64:
            memcpy(&w, v + 8 * i, 8);
            if ((ch->type == HS_TYPE_UINT64 && (uint64_t)w > (uint64_t)PV_INT8_EXACT) ||
                w > PV_INT8_EXACT || w < -PV_INT8_EXACT)
                return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc, PV_INT8_MSG, (long long)w);
            x = (double)w;
            break;
        case HS_TYPE_FLOAT64: x = ((const double *)v)[i]; break;
        default:
            return ex_fail(c, n, "column \"%s\" is a list of %s in the batch, not of numbers",
                           n->args[0]->name, hs_type_name(ch->type));
        }
        d[k] = x;
        f[k] = (float)x;
    }
    memcpy((uint8_t *)r.p + 4, &flags, 4);
    out->p = r.p;
    out->n = r.n;
    return HS_OK;
}

static hs_status ev_of_list(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    const pr_col_ref *r;
    HS_TRY(ex_col_ref(c, n->args[0], &r));
    const hs_column *col = r ? r->col : NULL;
    if (col && ((col->type != HS_TYPE_LIST && col->type != HS_TYPE_FIXED_LIST) || col->n_children != 1 ||
                !col->children[0]))
        return ex_fail(c, n, "column \"%s\" is %s in the batch, not a list", n->args[0]->name,
                       hs_type_name(col->type));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        int64_t row = c->base + j;
        out->nul[j] = 1;
        if (!col || !pr_ref_valid(r, row))
            continue;
        HS_TRY(list_row(c, n, col, row, &out->v.s[j]));
        out->nul[j] = 0;
    }
    return HS_OK;
}

hs_status ex_ev_na_fn(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_vec_new(c, EX_T_ARRAY, out));
    if (n->op == EX_FN_NA_OF_LIST)
        return ev_of_list(c, n, sel, ns, out);
    if (n->op != EX_FN_NA_CAT)
        return hs_err_set(c->err, HS_INTERNAL, "expression: unknown numeric array function");
    ex_vec a[2];
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a[0]));
    HS_TRY(ex_ev(c, n->args[1], sel, ns, &a[1]));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        bool n0 = a[0].nul[j], n1 = a[1].nul[j];
        out->nul[j] = n0 && n1;
        if (n0 || n1) {   /* array_cat: a NULL array is the other one */
            if (!(n0 && n1))
                out->v.s[j] = n0 ? a[1].v.s[j] : a[0].v.s[j];
            continue;
        }
        hs_error e = {0};
        pv_val x = {a[0].v.s[j].p, a[0].v.s[j].n}, y = {a[1].v.s[j].p, a[1].v.s[j].n}, r;
        if (pv_arr_cat(x, y, c->arena, &r, &e) != HS_OK)
            return na_fail(c, n, &e);
        out->v.s[j].p = r.p;
        out->v.s[j].n = r.n;
    }
    return HS_OK;
}
