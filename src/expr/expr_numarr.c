/*
 * expr/expr_numarr.c - binding and evaluation of numeric array values: the
 * integer[], bigint[], numeric[], real[] and double precision[] values (the
 * pv_arr blobs of expr/pgvector.h: ARRAY[...], '{...}'::int[], casts and the
 * results below) and list columns of numbers read as such values
 * (list<int8..int32> as integer[], list<int64> as bigint[], list<double> as
 * double precision[]; list<float> columns are vectors, expr_pgvector.c).
 *
 * Owns:
 *   array_append, array_prepend, array_cat, ||        EX_FN_NA_CAT
 *   a[i], a[lo:hi]                                     EX_FN_NA_ELEM / _SLICE
 *   array_position(s), array_remove, array_replace    EX_FN_NA_POSITION / ...
 *   array_to_string, x op ANY/ALL (a), @> <@ &&        EX_FN_NA_TO_STRING / _ANY / _CONTAINS
 *   array_lower/upper/ndims/dims (also of text[])      EX_FN_ARR_SHAPE
 *   = < ... IS DISTINCT FROM between arrays            EX_CMP, mode EX_CM_PV (pv_arr_cmp)
 *   the operands of IN, CASE, COALESCE, NULLIF         exb_na_unify
 *
 * Types are PostgreSQL 15's: the anycompatible functions (||, array_append,
 * array_position, array_remove, ...) and x op ANY(a) take the common type
 * of the operands' elements (integer < bigint < numeric < real < double
 * precision, each implicitly castable to the next), so ARRAY[1,2] || 2.5 is
 * numeric[], ARRAY[1] || 1.5::real real[], ARRAY[1] || 3000000000 bigint[];
 * the anyarray operators (= < @> && ...) need one element type on both
 * sides (integer[] = numeric[] is 42883); CASE / COALESCE / IN coerce to
 * the common array type.  An element argument x binds as ARRAY[x] of the
 * common kind, so elements compare blob to blob (pv_arr_elem_cmp: exact for
 * integers and numerics, float8's order with NaN last for the rest).
 *
 * NULL rules: array_cat's (a NULL array is the other one; both NULL:
 * NULL), array_append(NULL, x) is {x}; a[i] outside the array is NULL, a
 * slice outside it {} (a NULL bound: NULL); array_position / _positions /
 * _remove / _replace find NULL elements with a NULL x (IS NOT DISTINCT
 * FROM); ANY / ALL three-valued.  `array || 'literal'` reads the literal as
 * an array, as PostgreSQL does.  A multidimensional array (flagged by
 * pv_arr_in) is 0A000 wherever its flattened elements would show.
 */
#include "expr/expr_int.h"

#include "base/numfmt.h"
#include "expr/textarr.h"

#include <jansson.h>
#include <math.h>
#include <string.h>
#include <strings.h>

static hs_status bind_shape(ex_binder *b, const char *fn, ex_node **a, int n, int loc, ex_node **out);
static hs_status bind_search(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n, int loc, ex_node **out);
static hs_status no_fn(ex_binder *b, const char *fn, ex_node **a, int n, int loc);

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
    if (f == EX_FN_ARR_SHAPE) {
        *done = true;
        return bind_shape(b, fn, a, n, loc, out);
    }
    /* array_position over a list column of numbers with a value of
     * another type: the common type here (expr_array.c compares one type) */
    bool list_pos = f == EX_FN_ARRAY_POSITION && list_rank(a[0]) != R_NONE && !untyped(a[1]) &&
                    scalar_rank(a[1]) != list_rank(a[0]);
    if (f == EX_FN_NA_POSITION || f == EX_FN_NA_REMOVE || f == EX_FN_NA_REPLACE || list_pos ||
        ((f == EX_FN_ARRAY_POSITION || f == EX_FN_ARRAY_TO_STRING) && a[0]->type.t == EX_T_ARRAY &&
         !ex_is_ta(&a[0]->type))) {
        if (exb_ta_is(a[0]))   /* text[]: expr_textarr.c */
            return HS_OK;
        *done = true;
        if (arr_rank(a[0]) == R_NONE)   /* other arrays */
            return a[0]->type.t == EX_T_OTHER
                ? exb_err(b, HS_UNSUPPORTED, loc, "function %s of this array is not supported", fn)
                : no_fn(b, fn, a, n, loc);
        return bind_search(b, fn, f, a, n, loc, out);
    }
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
/* the other operators and functions of numeric array values            */

/* The scalar type of an element of rank's kind. */
static ex_ty elem_ty(int rank)
{
    ex_ty t = exb_ty(rank == R_INT4 || rank == R_BIGINT ? EX_T_INT : EX_T_FLOAT);
    if (rank == R_INT4 || rank == R_FLOAT4)
        t.bits = 32;
    return t;
}

static ex_ty int4_ty(void)
{
    ex_ty t = exb_ty(EX_T_INT);
    t.bits = 32;
    return t;
}

/* The scale a[i] of a numeric[] gets (PostgreSQL's numeric keeps each
 * element's own display scale; a column has one): of a constant array, its
 * element at constant subscripts sub[0..n_sub) when given, else the largest
 * of its elements'; of ARRAY[e...], the largest of the elements' types'
 * scales; else EX_NUMERIC_SCALE (the unconstrained numeric of a column). */
static int elem_scale(const ex_node *a, ex_node *const *sub, int n_sub)
{
    int best = -1;
    if (a->kind == EX_CONST && a->type.t == EX_T_ARRAY && !a->val.null) {
        pv_val v = {(const uint8_t *)a->val.s.p, a->val.s.n};
        int64_t at = -1;
        bool consts = n_sub > 0;
        for (int l = 0; l < n_sub; l++)
            consts &= sub[l]->kind == EX_CONST && !sub[l]->val.null && sub[l]->type.t == EX_T_INT;
        int32_t dims[PV_ARR_MAXDIM];
        int nd = pv_arr_dims(v, dims);
        if (consts && nd == n_sub) {
            at = 0;
            for (int l = 0; l < nd && at >= 0; l++) {
                int64_t x = sub[l]->val.i;
                at = x >= 1 && x <= dims[l] ? at * dims[l] + (x - 1) : -1;
            }
        }
        for (int64_t i = 0, len = pv_arr_len(v); i < len; i++) {
            __int128 x;
            int sc;
            if ((at < 0 || i == at) && pv_arr_get_exact(v, i, &x, &sc) && sc > best)
                best = sc;
        }
        return best >= 0 ? best : EX_NUMERIC_SCALE;
    }
    if (a->kind == EX_FUNC && a->op == EX_FN_PV_ARRAY) {
        for (int i = 0; i < a->n_args; i++) {
            const ex_node *e = a->args[i];
            int sc = e->type.t == EX_T_DEC ? e->type.scale : e->type.t == EX_T_INT ? 0
                   : e->type.t == EX_T_NULL ? -1 : 99;
            if (sc == 99)
                return EX_NUMERIC_SCALE;
            best = sc > best ? sc : best;
        }
        return best >= 0 ? best : EX_NUMERIC_SCALE;
    }
    return EX_NUMERIC_SCALE;
}

hs_status exb_na_subscript(ex_binder *b, ex_node *x, json_t *ind, int loc, ex_node **out)
{
    int rank = arr_rank(x);
    if (rank == R_NONE)
        return exb_err(b, HS_INTERNAL, loc, "subscript of a non-array");
    HS_TRY(to_arr(b, &x, rank));
    if (!json_is_true(json_object_get(ind, "is_slice"))) {
        ex_node *a[2] = {x, NULL};
        HS_TRY(exb_bind(b, json_object_get(ind, "uidx"), &a[1]));
        HS_TRY(exb_want_int32(b, &a[1], "array subscript"));
        /* numeric: at the scale elem_scale finds (docs/sql.md) */
        int sc = rank == R_NUMERIC ? elem_scale(x, &a[1], 1) : 0;
        ex_ty et = rank == R_NUMERIC ? exb_dec_type(38 - sc, sc) : elem_ty(rank);
        HS_TRY(exb_mk_fn(b, EX_FN_NA_ELEM, et, 0, a, 2, loc, out));
        return HS_OK;
    }
    ex_node *a[3] = {x, NULL, NULL};
    int aux = 0;
    static const char *const keys[2] = {"lidx", "uidx"};
    for (int i = 0; i < 2; i++) {
        json_t *j = json_object_get(ind, keys[i]);
        if (j && !json_is_null(j)) {
            HS_TRY(exb_bind(b, j, &a[1 + i]));
            HS_TRY(exb_want_int32(b, &a[1 + i], "array subscript"));
            aux |= 1 << i;
        } else if (!(a[1 + i] = exb_mk_const(b, exb_ty(EX_T_INT), loc))) {
            return exb_nomem(b);
        }
    }
    return exb_mk_fn(b, EX_FN_NA_SLICE, arr_ty(rank), aux, a, 3, loc, out);
}

hs_status exb_na_subscripts(ex_binder *b, ex_node *x, json_t *ind, size_t k, size_t m, int loc, ex_node **out)
{
    int rank = arr_rank(x);
    if (rank == R_NONE || m > PV_ARR_MAXDIM)
        return exb_err(b, HS_INVALID, loc, "number of array dimensions (%d) exceeds the maximum allowed (%d)",
                       (int)m, PV_ARR_MAXDIM);
    ex_node **a = hs_arena_calloc(&b->e->arena, m + 1, sizeof *a);
    if (!a)
        return exb_nomem(b);
    a[0] = x;
    for (size_t i = 0; i < m; i++) {
        const char *kind;
        json_t *nb;
        if (!exb_node_of(json_array_get(ind, k + i), &kind, &nb) || json_is_true(json_object_get(nb, "is_slice")))
            return exb_err(b, HS_UNSUPPORTED, loc, "slices of multidimensional arrays are not supported");
        HS_TRY(exb_bind(b, json_object_get(nb, "uidx"), &a[1 + i]));
        HS_TRY(exb_want_int32(b, &a[1 + i], "array subscript"));
    }
    int sc = rank == R_NUMERIC ? elem_scale(x, &a[1], (int)m) : 0;
    ex_ty et = rank == R_NUMERIC ? exb_dec_type(38 - sc, sc) : elem_ty(rank);
    return exb_mk_fn(b, EX_FN_NA_ELEM, et, 0, a, (int)m + 1, loc, out);
}

/* The common rank of array arr and element x (untyped: the array's), or
 * R_NONE. */
static int elem_common(const ex_node *arr, const ex_node *x)
{
    int ar = arr_rank(arr), xr = untyped(x) ? ar : scalar_rank(x);
    if (ar == R_NONE || xr == R_NONE)
        return R_NONE;
    return ar > xr ? ar : xr;
}

hs_status exb_na_any(ex_binder *b, const char *opname, int op, bool all, ex_node *x, ex_node *arr, int loc,
                     ex_node **out)
{
    char b1[48], b2[48];
    int rank = elem_common(arr, x);
    if (rank == R_NONE)
        return exb_err(b, HS_NOT_FOUND, loc, "operator does not exist: %s %s %s", exb_tname(&x->type, b1),
                       opname, exb_tname(&arr->type, b2));
    ex_node *a[2] = {arr, NULL};
    HS_TRY(to_arr(b, &a[0], rank));
    HS_TRY(one_elem(b, x, rank, loc, &a[1]));
    ex_node *n = exb_mk(b, EX_FUNC, exb_ty(EX_T_BOOL), loc, 2);
    if (!n)
        return exb_nomem(b);
    n->op = EX_FN_NA_ANY;
    n->aux = op;
    n->neg = all;
    n->args[0] = a[0];
    n->args[1] = a[1];
    *out = n;
    return exb_fold(b, out, false);
}

/* *l and *r as arrays of one kind for the anyarray operators (= < @> &&
 * ...): false when one is not an array of numbers or their kinds differ
 * (PostgreSQL has no integer[] = numeric[]); an untyped literal or NULL
 * takes the other's kind */
static hs_status two_arrays(ex_binder *b, ex_node **l, ex_node **r, bool *ok)
{
    int lr = arr_rank(*l), rr = arr_rank(*r);
    *ok = (lr != R_NONE || untyped(*l)) && (rr != R_NONE || untyped(*r)) && (lr != R_NONE || rr != R_NONE) &&
          (lr == rr || lr == R_NONE || rr == R_NONE);
    if (!*ok)
        return HS_OK;
    int rank = lr > rr ? lr : rr;
    HS_TRY(to_arr(b, l, rank));
    return to_arr(b, r, rank);
}

hs_status exb_na_unify(ex_binder *b, ex_node **a, int n, bool *ok)
{
    int rank = R_NONE;
    *ok = false;
    for (int i = 0; i < n; i++) {
        int r = arr_rank(a[i]);
        if (r == R_NONE && !untyped(a[i]))
            return HS_OK;
        if (r > rank)
            rank = r;
    }
    if (rank == R_NONE)
        return HS_OK;
    for (int i = 0; i < n; i++)
        if (a[i]->type.t != EX_T_NULL)
            HS_TRY(to_arr(b, &a[i], rank));
    *ok = true;
    return HS_OK;
}

hs_status exb_na_contains(ex_binder *b, bool overlap, ex_node *l, ex_node *r, int loc, ex_node **out)
{
    char b1[48], b2[48];
    ex_node *a[2] = {l, r};
    bool ok;
    HS_TRY(two_arrays(b, &a[0], &a[1], &ok));
    if (!ok)
        return exb_err(b, HS_NOT_FOUND, loc, "operator does not exist: %s %s %s", exb_tname(&l->type, b1),
                       overlap ? "&&" : "@>", exb_tname(&r->type, b2));
    return exb_mk_fn(b, EX_FN_NA_CONTAINS, exb_ty(EX_T_BOOL), overlap, a, 2, loc, out);
}

hs_status exb_na_cmp(ex_binder *b, const char *opname, int cmp, ex_node *l, ex_node *r, int loc, ex_node **out)
{
    char b1[48], b2[48];
    ex_node *l0 = l, *r0 = r;
    bool ok;
    HS_TRY(two_arrays(b, &l, &r, &ok));
    if (!ok)
        return exb_err(b, HS_NOT_FOUND, loc, "operator does not exist: %s %s %s", exb_tname(&l0->type, b1),
                       opname, exb_tname(&r0->type, b2));
    ex_node *n = exb_mk(b, EX_CMP, exb_ty(EX_T_BOOL), loc, 2);
    if (!n)
        return exb_nomem(b);
    n->op = cmp;
    n->cmode = EX_CM_PV;
    n->args[0] = l;
    n->args[1] = r;
    *out = n;
    return exb_fold(b, out, false);
}

static hs_status no_fn(ex_binder *b, const char *fn, ex_node **a, int n, int loc)
{
    char sig[200], tb[48];
    size_t at = 0;
    sig[0] = 0;
    for (int i = 0; i < n && at < 150; i++)
        at += (size_t)snprintf(sig + at, sizeof sig - at, "%s%s", i ? ", " : "", exb_tname(&a[i]->type, tb));
    return exb_err(b, HS_NOT_FOUND, loc, "function %s(%s) does not exist", fn, sig);
}

static hs_status want_str(ex_binder *b, ex_node **np, bool *ok)
{
    ex_t t = (*np)->type.t;
    *ok = *ok && (t == EX_T_STR || t == EX_T_UNKNOWN || t == EX_T_NULL);
    return *ok && t != EX_T_STR ? exb_cast_to(b, np, exb_ty(EX_T_STR), true) : HS_OK;
}

/* array_lower / array_upper / array_ndims / array_dims of any array value
 * or list column (a numeric one or a text[]) */
static hs_status bind_shape(ex_binder *b, const char *fn, ex_node **a, int n, int loc, ex_node **out)
{
    int aux = !strcasecmp(fn, "array_lower") ? 0 : !strcasecmp(fn, "array_upper") ? 1
            : !strcasecmp(fn, "array_ndims") ? 2 : 3;
    bool ok = true;
    if (arr_rank(a[0]) != R_NONE) {
        HS_TRY(to_arr(b, &a[0], arr_rank(a[0])));
    } else if (exb_ta_is(a[0])) {
        HS_TRY(exb_ta_coerce(b, &a[0], &ok));
    } else if (a[0]->type.t == EX_T_UNKNOWN) {   /* PostgreSQL: could not determine polymorphic type */
        return exb_err(b, HS_INVALID, loc, "could not determine polymorphic type because input has type unknown");
    } else {
        return a[0]->type.t == EX_T_OTHER
            ? exb_err(b, HS_UNSUPPORTED, loc, "function %s of this array is not supported", fn)
            : no_fn(b, fn, a, n, loc);
    }
    if (n > 1)
        HS_TRY(exb_want_int32(b, &a[1], "argument"));
    return exb_mk_fn(b, EX_FN_ARR_SHAPE, aux == 3 ? exb_ty(EX_T_STR) : int4_ty(), aux, a, n, loc, out);
}

/* array_position / array_positions / array_remove / array_replace /
 * array_to_string with a numeric array a[0] */
static hs_status bind_search(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n, int loc, ex_node **out)
{
    bool ok = true;
    if (f == EX_FN_ARRAY_TO_STRING) {
        HS_TRY(to_arr(b, &a[0], arr_rank(a[0])));
        for (int i = 1; i < n; i++)
            HS_TRY(want_str(b, &a[i], &ok));
        if (!ok)
            return no_fn(b, fn, a, n, loc);
        return exb_mk_fn(b, EX_FN_NA_TO_STRING, exb_ty(EX_T_STR), 0, a, n, loc, out);
    }
    int rank = elem_common(a[0], a[1]);
    if (f == EX_FN_NA_REPLACE && rank != R_NONE) {
        int r2 = elem_common(a[0], a[2]);
        rank = r2 == R_NONE ? R_NONE : r2 > rank ? r2 : rank;
    }
    if (rank == R_NONE)
        return no_fn(b, fn, a, n, loc);
    HS_TRY(to_arr(b, &a[0], rank));
    HS_TRY(one_elem(b, a[1], rank, loc, &a[1]));
    if (f == EX_FN_NA_REPLACE)
        HS_TRY(one_elem(b, a[2], rank, loc, &a[2]));
    switch (f) {
    case EX_FN_ARRAY_POSITION:
        if (n > 2)
            HS_TRY(exb_want_int32(b, &a[2], "argument"));
        return exb_mk_fn(b, EX_FN_NA_POSITION, int4_ty(), 0, a, n, loc, out);
    case EX_FN_NA_POSITION:
        return exb_mk_fn(b, EX_FN_NA_POSITION, arr_ty(R_INT4), 1, a, n, loc, out);
    default:
        return exb_mk_fn(b, f, arr_ty(rank), 0, a, n, loc, out);
    }
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
        int64_t w;
        switch (ch->type) {
        case HS_TYPE_INT8: w = ((const int8_t *)v)[i]; break;
        case HS_TYPE_INT16: w = ((const int16_t *)v)[i]; break;
        case HS_TYPE_INT32: w = ((const int32_t *)v)[i]; break;
        case HS_TYPE_UINT8: w = v[i]; break;
        case HS_TYPE_UINT16: w = ((const uint16_t *)v)[i]; break;
        case HS_TYPE_UINT32: w = ((const uint32_t *)v)[i]; break;
        case HS_TYPE_INT64: case HS_TYPE_UINT64:
            memcpy(&w, v + 8 * i, 8);
            if (ch->type == HS_TYPE_UINT64 && w < 0)
                return ex_fail(c, n, "bigint out of range");
            break;
        case HS_TYPE_FLOAT64:
            d[k] = ((const double *)v)[i];
            f[k] = (float)d[k];
            continue;
        default:
            return ex_fail(c, n, "column \"%s\" is a list of %s in the batch, not of numbers",
                           n->args[0]->name, hs_type_name(ch->type));
        }
        pv_arr_set_int(list_rank(n->args[0]) == R_INT4 ? PV_E_INT4 : PV_E_INT8, r, k, w);
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

static pv_val pv_of(const ex_str *s)
{
    pv_val v = {s->p, s->n};
    return v;
}

static hs_status put_arr(ex_ctx *c, const ex_node *n, pv_val v, pv_val w, const int64_t *idx, int64_t m,
                         ex_vec *out, int j)
{
    hs_error e = {0};
    pv_val r;
    if (pv_arr_pick(v, w, idx, m, c->arena, &r, &e) != HS_OK)
        return na_fail(c, n, &e);
    out->nul[j] = 0;
    out->v.s[j].p = r.p;
    out->v.s[j].n = r.n;
    return HS_OK;
}

/* element k of v against the only element of x (a NULL one matches a
 * NULL: IS NOT DISTINCT FROM) */
static bool same_elem(pv_val v, int64_t k, pv_val x)
{
    double d;
    bool vn = !pv_arr_get(v, k, &d), xn = !pv_arr_get(x, 0, &d);
    return vn || xn ? vn && xn : pv_arr_elem_cmp(v, k, x, 0) == 0;
}

/* array_position(s), array_remove, array_replace, a[lo:hi] of row j */
static hs_status search_row(ex_ctx *c, const ex_node *n, const ex_vec *a, int j, ex_vec *out)
{
    pv_val v = pv_of(&a[0].v.s[j]);
    int64_t len = pv_arr_len(v), m = 0;
    int64_t *idx = hs_arena_alloc(c->arena, sizeof *idx * (size_t)(len ? len : 1));
    if (!idx)
        return hs_err_nomem(c->err, sizeof *idx * (size_t)len);
    pv_val none = {NULL, 0};
    switch ((ex_fn)n->op) {
    case EX_FN_NA_SLICE: {
        int64_t lo = (n->aux & 1) ? a[1].v.i[j] : 1, hi = (n->aux & 2) ? a[2].v.i[j] : len;
        for (int64_t i = lo < 1 ? 1 : lo; i <= hi && i <= len; i++)
            idx[m++] = i - 1;
        return put_arr(c, n, v, none, idx, m, out, j);
    }
    case EX_FN_NA_POSITION: {
        int64_t from = 1;
        if (n->n_args > 2) {
            if (a[2].nul[j])
                return ex_fail(c, n, "initial position must not be null");
            from = a[2].v.i[j] < 1 ? 1 : a[2].v.i[j];
        }
        pv_val x = pv_of(&a[1].v.s[j]);
        for (int64_t i = from - 1; i < len; i++)
            if (same_elem(v, i, x)) {
                if (!n->aux) {
                    out->nul[j] = 0;
                    out->v.i[j] = i + 1;
                    return HS_OK;
                }
                idx[m++] = i;
            }
        if (!n->aux)
            return HS_OK;
        /* array_positions: an int4[] of the (1-based) positions */
        hs_error e = {0};
        pv_val r;
        double *d;
        if (pv_arr_new(c->arena, m, &r, &d, NULL, NULL, &e) != HS_OK)
            return na_fail(c, n, &e);
        (void)d;
        for (int64_t k = 0; k < m; k++)
            pv_arr_set_int(PV_E_INT4, r, k, idx[k] + 1);
        out->nul[j] = 0;
        out->v.s[j].p = r.p;
        out->v.s[j].n = r.n;
        return HS_OK;
    }
    case EX_FN_NA_REMOVE: case EX_FN_NA_REPLACE: {
        pv_val x = pv_of(&a[1].v.s[j]);
        for (int64_t i = 0; i < len; i++) {
            bool hit = same_elem(v, i, x);
            if (n->op == EX_FN_NA_REPLACE)
                idx[m++] = hit ? -1 : i;
            else if (!hit)
                idx[m++] = i;
        }
        return put_arr(c, n, v, n->op == EX_FN_NA_REPLACE ? pv_of(&a[2].v.s[j]) : none, idx, m, out, j);
    }
    default:
        return hs_err_set(c->err, HS_INTERNAL, "expression: unknown numeric array function");
    }
}

/* ex_array_join's element text of a numeric array */
typedef struct na_elems {
    pv_val v;
    pv_elem e;
    char num[48];
} na_elems;

static hs_status na_elem_text(ex_ctx *c, void *ctx, int64_t i, bool *valid, ex_str *s)
{
    na_elems *ne = ctx;
    double d;
    (void)c;
    *valid = pv_arr_get(ne->v, i, &d);
    if (*valid) {
        s->p = (const uint8_t *)ne->num;
        s->n = (size_t)pv_arr_elem_text(ne->e, ne->v, i, ne->num);
    }
    return HS_OK;
}

/* array_to_string(a, sep[, null_text]) of row j */
static hs_status to_string_row(ex_ctx *c, const ex_node *n, const ex_vec *a, int j, ex_vec *out)
{
    na_elems ne = {.v = pv_of(&a[0].v.s[j]), .e = (pv_elem)n->args[0]->type.elem};
    bool has_nt = n->n_args > 2 && !a[2].nul[j];
    return ex_array_join(c, pv_arr_len(ne.v), na_elem_text, &ne, &a[1].v.s[j],
                         has_nt ? &a[2].v.s[j] : NULL, out, j);
}

/* x op ANY / ALL (a) of row j (x: the only element of a[1]) */
static void any_row(const ex_node *n, const ex_vec *a, int j, ex_vec *out)
{
    pv_val v = pv_of(&a[0].v.s[j]), x = pv_of(&a[1].v.s[j]);
    bool all = n->neg, saw_null = false;
    double d;
    bool x_null = a[1].nul[j] || !pv_arr_get(x, 0, &d);
    for (int64_t i = 0, len = pv_arr_len(v); i < len; i++) {
        if (x_null || !pv_arr_get(v, i, &d)) {
            saw_null = true;
            continue;
        }
        bool r = ex_cmp_res(n->aux, pv_arr_elem_cmp(x, 0, v, i));   /* x op elem */
        if (r != all) {
            out->nul[j] = 0;
            out->v.b[j] = r;
            return;
        }
    }
    out->nul[j] = saw_null;
    out->v.b[j] = all;
}

/* array_lower / upper / ndims / dims of row j (one dimension, lower
 * bound 1; an empty array has none: NULL) */
static hs_status shape_row(ex_ctx *c, const ex_node *n, const ex_vec *a, int j, ex_vec *out)
{
    pv_val v = pv_of(&a[0].v.s[j]);
    int32_t dims[PV_ARR_MAXDIM];
    int nd = 1;
    if (ex_is_ta(&n->args[0]->type)) {
        dims[0] = (int32_t)ta_len(v);
        nd = dims[0] > 0;
    } else {
        nd = pv_arr_dims(v, dims);
    }
    if (nd == 0 || (n->aux < 2 && (a[1].v.i[j] < 1 || a[1].v.i[j] > nd)))
        return HS_OK;
    out->nul[j] = 0;
    switch (n->aux) {
    case 0: out->v.i[j] = 1; return HS_OK;
    case 1: out->v.i[j] = dims[a[1].v.i[j] - 1]; return HS_OK;
    case 2: out->v.i[j] = nd; return HS_OK;
    default: {
        char t[16 * PV_ARR_MAXDIM];
        int k = 0;
        for (int l = 0; l < nd; l++)
            k += hs_snprintf_c(t + k, sizeof t - (size_t)k, "[1:%d]", (int)dims[l]);
        return ex_put_str(c, &out->v.s[j], t, (size_t)k);
    }
    }
}

/* a numeric element (x at scale sc when exact, else the double d) as a
 * decimal of n's type's scale (EX_NUMERIC_SCALE): a value that does not
 * fit is 22003 as PostgreSQL's numeric overflow is */
static hs_status elem_dec(ex_ctx *c, const ex_node *n, bool exact, __int128 x, int sc, double d, __int128 *out)
{
    int want = n->type.scale;
    if (!exact) {
        char t[64];
        int tl = isfinite(d) ? hs_snprintf_c(t, sizeof t, "%.15g", d) : 0;
        hs_error e = {0};
        pv_val one;
        if (tl <= 0 || pv_arr_new(c->arena, 1, &one, NULL, NULL, NULL, &e) != HS_OK ||
            pv_arr_set_text(PV_E_NUMERIC, one, 0, t, (size_t)tl, &e) != HS_OK ||
            !pv_arr_get_exact(one, 0, &x, &sc))
            return ex_fail(c, n, "numeric field overflow");
    }
    for (; sc > want; sc--) {   /* round half away from zero */
        __int128 r = x % 10;
        x /= 10;
        if (r >= 5 || r <= -5)
            x += x < 0 || r < 0 ? -1 : 1;
    }
    static const __int128 lim = (__int128)100000000000000000LL * 100000000000000000LL * 10000;   /* 10^38 */
    for (; sc < want; sc++) {
        if (x >= lim / 10 || x <= -lim / 10)
            return ex_fail(c, n, "numeric field overflow");
        x *= 10;
    }
    *out = x;
    return HS_OK;
}

/* the EX_FN_NA_* functions past the concatenation */
static hs_status ev_ops(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_fn fn = (ex_fn)n->op;
    HS_TRY(ex_vec_new(c, n->type.t, out));
    int na = n->n_args;
    ex_vec *a = hs_arena_calloc(c->arena, (size_t)na, sizeof *a);
    if (!a)
        return hs_err_nomem(c->err, sizeof *a * (size_t)na);
    for (int i = 0; i < na; i++)
        HS_TRY(ex_ev(c, n->args[i], sel, ns, &a[i]));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->nul[j] = 1;
        if (a[0].nul[j])
            continue;
        pv_val v = pv_of(&a[0].v.s[j]);
        /* multidimensional arrays: a[i][j], the shape, and what reads the
         * elements in row-major order as PostgreSQL's do (x op ANY / ALL,
         * @> <@ &&, array_to_string); the rest 0A000 */
        bool flat = fn == EX_FN_NA_ELEM || fn == EX_FN_ARR_SHAPE || fn == EX_FN_NA_ANY ||
                    fn == EX_FN_NA_CONTAINS || fn == EX_FN_NA_TO_STRING;
        if (!flat && !ex_is_ta(&n->args[0]->type) && pv_arr_multidim(v))
            return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc, "multidimensional arrays are not supported");
        switch (fn) {
        case EX_FN_NA_ANY:
            any_row(n, a, j, out);
            continue;
        case EX_FN_NA_POSITION: case EX_FN_NA_REMOVE: case EX_FN_NA_REPLACE:
            HS_TRY(search_row(c, n, a, j, out));
            continue;
        case EX_FN_NA_TO_STRING:
            if (!a[1].nul[j])
                HS_TRY(to_string_row(c, n, a, j, out));
            continue;
        default:
            break;
        }
        bool any_null = false;   /* the other functions are strict (a slice: in its given bounds) */
        for (int i = 1; i < na; i++)
            any_null |= a[i].nul[j] && !(fn == EX_FN_NA_SLICE && !(n->aux & (1 << (i - 1))));
        if (any_null)
            continue;
        switch (fn) {
        case EX_FN_NA_ELEM: {
            /* a[i1]...[ik]: row-major; NULL outside or with a number of
             * subscripts other than the array's dimensions */
            int32_t dims[PV_ARR_MAXDIM];
            int nd = pv_arr_dims(v, dims);
            int64_t i = 0;
            bool inside = nd == na - 1;
            for (int l = 0; l < nd && inside; l++) {
                int64_t s = a[1 + l].v.i[j];
                inside = s >= 1 && s <= dims[l];
                i = i * dims[l] + (s - 1);
            }
            i += 1;
            double d;
            if (!inside || i < 1 || i > pv_arr_len(v) || !pv_arr_get(v, i - 1, &d))
                break;
            out->nul[j] = 0;
            __int128 x;
            int sc;
            bool exact = pv_arr_get_exact(v, i - 1, &x, &sc);
            if (n->type.t == EX_T_INT)
                out->v.i[j] = exact ? (int64_t)x : (int64_t)d;
            else if (n->type.t == EX_T_DEC)
                HS_TRY(elem_dec(c, n, exact, x, sc, d, &out->v.d[j]));
            else
                out->v.f[j] = d;
            break;
        }
        case EX_FN_NA_SLICE:
            HS_TRY(search_row(c, n, a, j, out));
            break;
        case EX_FN_NA_CONTAINS:
            out->nul[j] = 0;
            out->v.b[j] = pv_arr_contains(v, pv_of(&a[1].v.s[j]), n->aux != 0);
            break;
        case EX_FN_ARR_SHAPE:
            HS_TRY(shape_row(c, n, a, j, out));
            break;
        default:
            return hs_err_set(c->err, HS_INTERNAL, "expression: unknown numeric array function");
        }
    }
    return HS_OK;
}

hs_status ex_ev_na_fn(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    if (n->op > EX_FN_NA_CAT)
        return ev_ops(c, n, sel, ns, out);
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
