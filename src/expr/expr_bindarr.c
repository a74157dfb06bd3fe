/*
 * expr/expr_bindarr.c - binding of array and struct expressions.
 *
 * Owns: x op ANY/ALL (ARRAY[...] | list column), the containment operators
 * @> <@ && (list columns and ARRAY[...]), and indirection: struct fields
 * ((s).f, s.f) and array subscripts (a[i]).  expr_bind.c's exb_bind calls
 * in here for A_Expr kinds AEXPR_OP_ANY/ALL, the containment operators and
 * A_Indirection nodes; evaluation of the list forms is expr_array.c's.
 */
#include "expr/expr_int.h"

#include "base/mem.h"
#include "expr/pgvector.h"
#include "expr/textarr.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The elements of a one-dimensional array's text form, as PostgreSQL's
 * array_in reads it (expr/textarr.h ta_in: quoting, backslash escapes,
 * whitespace, unquoted NULL), appended to els as string constants
 * ({"A_Const": {"sval": ...}} or {"A_Const": {"isnull": true}}), which the
 * caller casts to the element type.  Errors are ta_in's: "malformed array
 * literal" (22P02); dimension decorations ([1:2]=) and nested braces
 * (multidimensional arrays) are 0A000. */
static hs_status array_literal_into(ex_binder *b, const char *txt, int loc, json_t *els)
{
    hs_error err = {0};
    pv_val v;
    hs_status st = ta_in(txt, strlen(txt), &b->e->arena, &v, &err);
    if (st == HS_NOMEM || err.code == HS_NOMEM)
        return exb_nomem(b);
    if (st != HS_OK)
        return exb_err(b, st, loc, "%s", err.msg);
    for (int64_t i = 0, n = ta_len(v); i < n; i++) {
        const uint8_t *p;
        size_t len;
        json_t *c = !ta_get(v, i, &p, &len)
                        ? json_pack("{s:{s:b,s:i}}", "A_Const", "isnull", 1, "location", -1)
                        : json_pack("{s:{s:{s:s%},s:i}}", "A_Const", "sval", "sval", (const char *)p, len,
                                    "location", -1);
        if (!c || json_array_append_new(els, c) != 0)
            return exb_nomem(b);
    }
    return HS_OK;
}

/* The elements of '{...}' (A_Const body c, its string sval) into a new
 * array *out. */
static hs_status array_literal(ex_binder *b, json_t *c, int loc, json_t **out)
{
    *out = json_array();
    if (!*out)
        return exb_nomem(b);
    const char *txt = json_string_value(json_object_get(json_object_get(c, "sval"), "sval"));
    hs_status st = array_literal_into(b, txt, exb_loc(c) >= 0 ? exb_loc(c) : loc, *out);
    if (st != HS_OK) {
        json_decref(*out);
        *out = NULL;
    }
    return st;
}

/* A_Const body c: a string constant?  Not one of a multidimensional
 * array ('{{1,2},{3,4}}', dimension decorations): that one is a value of
 * the numeric array kernel (expr_numarr.c), whose ANY / ALL read its
 * elements in row-major order as PostgreSQL's do. */
static bool is_string_const(json_t *c)
{
    const char *t = json_string_value(json_object_get(json_object_get(c, "sval"), "sval"));
    if (!t)
        return false;
    while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')
        t++;
    if (*t == '[')
        return false;
    if (*t == '{') {
        t++;
        while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')
            t++;
        if (*t == '{')
            return false;
    }
    return true;
}

/* The elements of ARRAY[...] (A_ArrayExpr body a; absent for ARRAY[]) as a
 * new reference. */
static json_t *array_expr_elements(json_t *a)
{
    json_t *e = json_object_get(a, "elements");
    return e ? json_incref(e) : json_array();
}

/* rj's array when it is ARRAY[...], ARRAY[...]::t[], '{...}'::t[],
 * NULL::t[] or an untyped '{...}' (its elements of unknown type, resolved
 * by the comparison as PostgreSQL resolves the literal as x's array type):
 * *found, *elems the element nodes (a new reference; '{...}' read by
 * array_literal), *cast_type t without its array bounds (a new reference,
 * NULL for ARRAY[...] and '{...}'), *is_null for NULL::t[].  *found false
 * (nothing set) for any other expression. */
static hs_status array_elements(ex_binder *b, json_t *rj, int loc, bool *found, json_t **elems,
                                json_t **cast_type, bool *is_null)
{
    const char *k = NULL, *k2 = NULL;
    json_t *rb = NULL, *ab = NULL;
    *found = *is_null = false;
    *elems = *cast_type = NULL;
    if (!exb_node_of(rj, &k, &rb))
        return HS_OK;
    if (!strcmp(k, "A_Const") && is_string_const(rb)) {
        HS_TRY(array_literal(b, rb, loc, elems));
        *found = true;
        return HS_OK;
    }
    if (!strcmp(k, "A_ArrayExpr")) {
        *elems = array_expr_elements(rb);
        *found = *elems != NULL;
        return *found ? HS_OK : exb_nomem(b);
    }
    if (strcmp(k, "TypeCast") != 0 || !exb_node_of(json_object_get(rb, "arg"), &k2, &ab))
        return HS_OK;
    bool one_dim = json_array_size(json_object_get(json_object_get(rb, "typeName"), "arrayBounds")) == 1;
    if (!strcmp(k2, "A_ArrayExpr"))
        *elems = array_expr_elements(ab);
    else if (!strcmp(k2, "A_Const") && one_dim && json_is_true(json_object_get(ab, "isnull")))
        *is_null = true;
    else if (!strcmp(k2, "A_Const") && one_dim && is_string_const(ab))
        HS_TRY(array_literal(b, ab, loc, elems));
    else
        return HS_OK;
    *cast_type = json_deep_copy(json_object_get(rb, "typeName"));
    if (!*cast_type || (!*elems && !*is_null)) {
        json_decref(*elems);
        json_decref(*cast_type);
        *elems = *cast_type = NULL;
        return exb_nomem(b);
    }
    json_object_del(*cast_type, "arrayBounds");
    *found = true;
    return HS_OK;
}

/* x op ANY (array) / x op ALL (array), PostgreSQL's scalar-array
 * comparison (subqueries are SubLinks, planned as joins):
 *   ANY(ARRAY[e1, ...][::t[]])  the OR (ALL: AND) of x op ei, which is its
 *                               three-valued meaning exactly
 *   ANY(list column)            EX_FN_LIST_ANY, evaluated per row over the
 *                               elements (expr_array.c, ex_ev_array_fn): true when
 *                               one comparison is true, else NULL when one was
 *                               NULL, else false (ALL: the dual); an empty
 *                               array gives false (ALL: true), a NULL one NULL
 *   ANY('{e1,...}'[::t[]])      the array's text form (array_literal) read
 *                               into the elements of an ARRAY[...]::t[]
 *                               (untyped: elements resolved against x)
 * An empty typed array gives false (ALL: true) whatever x is; a NULL one
 * (NULL::t[]) NULL.  Other array expressions (functions, parameters) are
 * 0A000. */
hs_status exb_any_all(ex_binder *b, json_t *body, const char *opname, bool all, int loc,
                              ex_node **out)
{
    static const char *const ops[] = {"=", "<>", "<", "<=", ">", ">="};
    int op = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(opname, ops[i]))
            op = i;
    if (!strcmp(opname, "!="))
        op = PR_NE;
    json_t *lj = json_object_get(body, "lexpr"), *rj = json_object_get(body, "rexpr");
    bool found, is_null;
    json_t *els, *cast_type;   /* ARRAY[...]::t[]: t, each element cast to it */
    HS_TRY(array_elements(b, rj, loc, &found, &els, &cast_type, &is_null));
    const char *rk = NULL;
    json_t *rbody;
    bool bare = found && !cast_type && exb_node_of(rj, &rk, &rbody) && !strcmp(rk, "A_Const");
    if (found && (is_null || ((cast_type || bare) && json_array_size(els) == 0))) {
        /* NULL::t[]: NULL; an empty t[]: false (ALL: true), x never compared */
        json_decref(els);
        json_decref(cast_type);
        ex_node *c = exb_mk_const(b, exb_ty(is_null ? EX_T_NULL : EX_T_BOOL), loc);
        if (!c)
            return exb_nomem(b);
        c->val.i = all;
        if (is_null)
            HS_TRY(exb_cast_to(b, &c, exb_ty(EX_T_BOOL), true));
        *out = c;
        return HS_OK;
    }
    if (found) {
        /* the OR / AND of x op ei, each bound as a comparison of its own */
        size_t n = json_array_size(els);
        if (n == 0) {
            json_decref(els);
            return exb_err(b, HS_INVALID, loc, "cannot determine type of empty array");
        }
        ex_node **a = hs_arena_calloc(&b->e->arena, n, sizeof *a);
        if (!a) {
            json_decref(els);
            json_decref(cast_type);
            return exb_nomem(b);
        }
        hs_status st = HS_OK;
        for (size_t i = 0; i < n && st == HS_OK; i++) {
            json_t *e = json_array_get(els, i);
            json_t *el = cast_type ? json_pack("{s:{s:O,s:O,s:i}}", "TypeCast", "arg", e, "typeName",
                                               cast_type, "location", -1)
                                   : json_incref(e);
            json_t *cmp = el ? json_pack("{s:{s:s,s:O,s:O,s:o,s:i}}", "A_Expr", "kind", "AEXPR_OP",
                                         "name", json_object_get(body, "name"), "lexpr", lj, "rexpr",
                                         el, "location", loc)
                             : NULL;
            /* an element that is an array (ARRAY[ARRAY[1]], ARRAY['{1}'::int[]],
             * ARRAY[a] of an array column a) makes ARRAY[...] multidimensional:
             * PostgreSQL compares x with its elements; ours is 0A000 */
            const char *ek;
            json_t *eb;
            bool arr_el = cmp && exb_node_of(e, &ek, &eb) &&
                          (!strcmp(ek, "A_ArrayExpr") ||
                           (!strcmp(ek, "TypeCast") &&
                            json_array_size(json_object_get(json_object_get(eb, "typeName"), "arrayBounds")) > 0));
            st = !cmp ? exb_nomem(b) : arr_el ? HS_OK : exb_bind(b, cmp, &a[i]);
            json_decref(cmp);
            if (st == HS_OK && (arr_el || (a[i]->kind == EX_CMP && a[i]->n_args == 2 &&
                                           a[i]->args[1]->type.t == EX_T_ARRAY)))
                st = exb_err(b, HS_UNSUPPORTED, loc, "multidimensional arrays are not supported");
            if (st == HS_OK)
                st = exb_need_bool(b, &a[i], all ? "ALL" : "ANY");
        }
        json_decref(els);
        json_decref(cast_type);
        HS_TRY(st);
        if (n == 1) {
            *out = a[0];
            return HS_OK;
        }
        ex_node *x = exb_mk(b, all ? EX_AND : EX_OR, exb_ty(EX_T_BOOL), loc, 0);
        if (!x)
            return exb_nomem(b);
        x->args = a;
        x->n_args = (int)n;
        *out = x;
        return exb_fold(b, out, false);
    }
    if (op < 0)
        return exb_err(b, HS_UNSUPPORTED, loc, "operator %s with %s is not supported", opname,
                       all ? "ALL" : "ANY");
    ex_node *x, *arr;
    HS_TRY(exb_bind(b, lj, &x));
    HS_TRY(exb_bind(b, rj, &arr));
    char b1[48], b2[48];
    if (ex_is_ta(&arr->type)) {   /* x op ANY (text[] value): expr_textarr.c */
        ex_t xt = x->type.t;
        if (xt == EX_T_UNKNOWN || xt == EX_T_NULL)
            HS_TRY(exb_cast_to(b, &x, exb_ty(EX_T_STR), true));
        else if (xt != EX_T_STR)
            return exb_err(b, HS_NOT_FOUND, loc, "operator does not exist: %s %s text",
                           exb_tname(&x->type, b1), opname);
        ex_node *n = exb_mk(b, EX_FUNC, exb_ty(EX_T_BOOL), loc, 2);
        if (!n)
            return exb_nomem(b);
        n->op = EX_FN_LIST_ANY;
        n->aux = op;
        n->neg = all;
        n->args[0] = arr;
        n->args[1] = x;
        *out = n;
        return exb_fold(b, out, false);
    }
    if (arr->type.t == EX_T_ARRAY)   /* x op ANY (numeric array value): expr_numarr.c */
        return exb_na_any(b, opname, op, all, x, arr, loc, out);
    if (arr->kind != EX_COL || arr->type.t != EX_T_OTHER || !arr->field ||
        (arr->field->type != HS_TYPE_LIST && arr->field->type != HS_TYPE_FIXED_LIST))
        return exb_err(b, arr->type.t == EX_T_OTHER || arr->type.t == EX_T_UNKNOWN ? HS_UNSUPPORTED
                                                                                 : HS_INVALID,
                       arr->loc, arr->type.t == EX_T_OTHER || arr->type.t == EX_T_UNKNOWN
                           ? "%s of this array expression is not supported (an array column or ARRAY[...])"
                           : "op %s (array) requires array on right side",
                       all ? "ALL" : "ANY");
    ex_ty et = ex_type_of_field(&arr->field->children[0]);
    if (et.t == EX_T_OTHER || ex_is_pvx(et.t) || et.t == EX_T_INTERVAL)
        return exb_err(b, HS_UNSUPPORTED, arr->loc, "%s of arrays of %s is not supported",
                       all ? "ALL" : "ANY", et.t == EX_T_OTHER ? "nested values" : exb_tname(&et, b1));
    bool same = x->type.t == et.t && (et.t != EX_T_DEC || x->type.scale <= et.scale) &&
                (et.t != EX_T_TS || (x->type.unit == et.unit && x->type.tz == et.tz)) &&
                (et.t != EX_T_TIME || x->type.unit == et.unit) && x->type.uuid == et.uuid;
    /* integers and floats compare as int64 and double as they are, as in
     * array_position */
    if (x->type.t == EX_T_UNKNOWN || x->type.t == EX_T_NULL ||
        (same && et.t != EX_T_INT && et.t != EX_T_FLOAT))
        HS_TRY(exb_cast_to(b, &x, et, true));
    else if (!same && et.t == EX_T_STR)   /* integer = ANY(text[]) */
        return exb_err(b, HS_NOT_FOUND, loc, "operator does not exist: %s %s text",
                       exb_tname(&x->type, b1), opname);
    else if (!same)
        return exb_err(b, HS_UNSUPPORTED, x->loc, "%s with a %s against an array of %s is not "
                       "supported (cast it to the element type)", all ? "ALL" : "ANY",
                       exb_tname(&x->type, b1), exb_tname(&et, b2));
    ex_node *n = exb_mk(b, EX_FUNC, exb_ty(EX_T_BOOL), loc, 2);
    if (!n)
        return exb_nomem(b);
    n->op = EX_FN_LIST_ANY;
    n->aux = op;
    n->neg = all;
    n->args[0] = arr;
    n->args[1] = x;
    *out = n;
    return HS_OK;
}

/* a @> ARRAY[x1, ...] (contains), a && ARRAY[...] (overlaps) and
 * ARRAY[...] <@ a of a list column a, as PostgreSQL's array operators:
 * NULL when a is NULL; otherwise @> holds when every xi equals an element
 * of a, && when one does (a NULL xi or element never matches); the right
 * side may be the text form '{x1,...}'::t[] too.  Bound as
 *   CASE WHEN a IS NULL THEN NULL ELSE (xi = ANY(a)) IS TRUE AND|OR ... END
 * over the list comparison of bind_any_all. */
hs_status exb_contains(ex_binder *b, const char *opname, json_t *lj, json_t *rj, int loc,
                               ex_node **out)
{
    bool overlap = !strcmp(opname, "&&");
    if (!strcmp(opname, "<@")) {
        json_t *t = lj;
        lj = rj;
        rj = t;
    }
    bool found, is_null;
    json_t *els, *cast_type;
    HS_TRY(array_elements(b, rj, loc, &found, &els, &cast_type, &is_null));
    ex_node *a;
    hs_status st0 = exb_bind(b, lj, &a);
    if (st0 != HS_OK) {
        json_decref(els);
        json_decref(cast_type);
        return st0;
    }
    if (!found || a->kind != EX_COL || a->type.t != EX_T_OTHER || !a->field ||
        (a->field->type != HS_TYPE_LIST && a->field->type != HS_TYPE_FIXED_LIST)) {
        json_decref(els);
        json_decref(cast_type);
        ex_node *r;
        if (exb_ta_is(a) || a->type.t == EX_T_UNKNOWN) {   /* text[] values: expr_textarr.c */
            HS_TRY(exb_bind(b, rj, &r));
            if (exb_ta_is(a) || exb_ta_is(r))
                return exb_ta_contains(b, overlap, a, r, loc, out);
        }
        if (exb_na_is(a) || a->type.t == EX_T_UNKNOWN || a->type.t == EX_T_NULL) {   /* expr_numarr.c */
            HS_TRY(exb_bind(b, rj, &r));
            if (exb_na_is(a) || exb_na_is(r))
                return exb_na_contains(b, overlap, a, r, loc, out);
        }
        return exb_err(b, HS_UNSUPPORTED, loc, "operator %s is supported between an array column "
                       "and ARRAY[...] or '{...}'::t[] only", opname);
    }
    if (is_null) {   /* a @> NULL::t[]: NULL */
        json_decref(cast_type);
        ex_node *c = exb_mk_const(b, exb_ty(EX_T_NULL), loc);
        if (!c)
            return exb_nomem(b);
        HS_TRY(exb_cast_to(b, &c, exb_ty(EX_T_BOOL), true));
        *out = c;
        return HS_OK;
    }
    size_t n = json_array_size(els);
    json_t *terms = json_array();
    for (size_t i = 0; terms && i < n; i++) {
        json_t *e = json_array_get(els, i);
        json_t *el = cast_type ? json_pack("{s:{s:O,s:O,s:i}}", "TypeCast", "arg", e, "typeName",
                                           cast_type, "location", -1)
                               : json_incref(e);
        json_t *any = el ? json_pack("{s:{s:s,s:[{s:{s:s}}],s:o,s:O,s:i}}", "A_Expr", "kind",
                                     "AEXPR_OP_ANY", "name", "String", "sval", "=", "lexpr", el,
                                     "rexpr", lj, "location", loc)
                         : NULL;
        json_t *bt = any ? json_pack("{s:{s:o,s:s,s:i}}", "BooleanTest", "arg", any, "booltesttype",
                                     "IS_TRUE", "location", loc)
                         : NULL;
        if (!bt || json_array_append_new(terms, bt) != 0) {
            json_decref(terms);
            terms = NULL;
        }
    }
    json_decref(els);
    json_decref(cast_type);
    if (!terms)
        return exb_nomem(b);
    hs_status st;
    ex_node *body = NULL;
    if (n == 0) {   /* ARRAY[]::t[]: contains nothing, overlaps nothing */
        json_decref(terms);
        body = exb_mk_const(b, exb_ty(EX_T_BOOL), loc);
        if (!body)
            return exb_nomem(b);
        body->val.i = !overlap;
    } else {
        json_t *all = n == 1 ? json_incref(json_array_get(terms, 0))
                             : json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop",
                                         overlap ? "OR_EXPR" : "AND_EXPR", "args", terms, "location", loc);
        json_decref(terms);
        if (!all)
            return exb_nomem(b);
        st = exb_bind(b, all, &body);
        json_decref(all);
        HS_TRY(st);
    }
    /* NULL when the array is NULL */
    ex_node *isnull = exb_mk(b, EX_IS_NULL, exb_ty(EX_T_BOOL), loc, 1);
    ex_node *nul = exb_mk_const(b, exb_ty(EX_T_NULL), loc);
    ex_node *c = exb_mk(b, EX_CASE, exb_ty(EX_T_BOOL), loc, 3);
    if (!isnull || !nul || !c)
        return exb_nomem(b);
    isnull->args[0] = a;
    HS_TRY(exb_cast_to(b, &nul, exb_ty(EX_T_BOOL), true));
    c->aux = 0;
    c->args[0] = isnull;
    c->args[1] = nul;
    c->args[2] = body;
    *out = c;
    return HS_OK;
}

/* ---- struct fields and array elements ---- */

/* The COL node of field `name` of the struct column x (PostgreSQL's (x).name).
 * In SQL (a scope) the struct is a top-level column found by field id and
 * the field is found below it by name (sub); elsewhere a child with a field
 * id is found by that id, else by its path of names. */
hs_status exb_struct_field(ex_binder *b, const ex_node *x, const hs_field *f, int loc, ex_node **out)
{
    ex_node *c = exb_mk(b, EX_COL, ex_type_of_field(f), loc, 0);
    const char **path = hs_arena_calloc(&b->e->arena, (size_t)x->path_len + 1, sizeof *path);
    size_t ln = strlen(x->name), lf = strlen(f->name);
    char *nm = hs_arena_alloc(&b->e->arena, ln + lf + 2);
    if (!c || !path || !nm)
        return exb_nomem(b);
    memcpy(path, x->path, (size_t)x->path_len * sizeof *path);
    path[x->path_len] = f->name;
    memcpy(nm, x->name, ln);
    nm[ln] = '.';
    memcpy(nm + ln + 1, f->name, lf + 1);
    c->field = f;
    c->name = nm;
    c->path = path;
    c->path_len = x->path_len + 1;
    if (b->scope) {
        c->field_id = x->field_id;
        c->sub = x->sub + 1;
    } else {
        c->field_id = x->field_id >= 0 && f->field_id >= 0 ? f->field_id : -1;
    }
    c->slot = b->e->n_slots++;
    *out = c;
    return HS_OK;
}

/* x[i]: the element of a list column (subscripts of other expressions and
 * slices are 0A000; lists of lists and of structs too). */
static hs_status bind_subscript(ex_binder *b, ex_node *x, json_t *ind, int loc, ex_node **out)
{
    char b1[48];
    bool slice = json_is_true(json_object_get(ind, "is_slice"));
    if (x->kind == EX_FUNC && (x->op == EX_FN_ARR_ELEM || x->op == EX_FN_TA_SLICE || x->op == EX_FN_NA_ELEM ||
                               x->op == EX_FN_NA_SLICE))
        return exb_err(b, HS_UNSUPPORTED, loc, "subscripts of multidimensional arrays are not supported");
    if (ex_is_ta(&x->type) || (slice && exb_ta_is(x)))   /* text[]: expr_textarr.c */
        return exb_ta_subscript(b, x, ind, loc, out);
    if ((x->type.t == EX_T_ARRAY && exb_na_is(x)) || (slice && exb_na_is(x)))   /* expr_numarr.c */
        return exb_na_subscript(b, x, ind, loc, out);
    if (slice)
        return exb_err(b, HS_UNSUPPORTED, loc, "array slices are not supported");
    if (x->kind != EX_COL || x->type.t != EX_T_OTHER || !x->field ||
        (x->field->type != HS_TYPE_LIST && x->field->type != HS_TYPE_FIXED_LIST)) {
        if (x->type.t == EX_T_OTHER || ex_is_pvx(x->type.t))
            return exb_err(b, HS_UNSUPPORTED, loc, "subscripts of %s are not supported",
                          ex_is_pvx(x->type.t) ? exb_tname(&x->type, b1) : "this expression");
        return exb_err(b, HS_INVALID, loc, "cannot subscript type %s because it does not support subscripting",
                      exb_tname(&x->type, b1));
    }
    const hs_field *ef = &x->field->children[0];
    ex_ty et = ex_type_of_field(ef);
    if (et.t == EX_T_OTHER || ex_is_pvx(et.t))
        return exb_err(b, HS_UNSUPPORTED, loc, "subscripts of arrays of nested values are not supported");
    ex_node *i;
    HS_TRY(exb_bind(b, json_object_get(ind, "uidx"), &i));
    if (i->type.t == EX_T_UNKNOWN || i->type.t == EX_T_NULL)
        HS_TRY(exb_cast_to(b, &i, exb_ty(EX_T_INT), true));
    if (i->type.t != EX_T_INT)
        return exb_err(b, HS_INVALID, i->loc, "array subscript must have type integer");
    ex_node *n = exb_mk(b, EX_FUNC, et, loc, 2);
    if (!n)
        return exb_nomem(b);
    n->op = EX_FN_ARR_ELEM;
    n->args[0] = x;
    n->args[1] = i;
    *out = n;
    return HS_OK;
}

hs_status exb_indirection(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    ex_node *x;
    HS_TRY(exb_bind(b, json_object_get(body, "arg"), &x));
    json_t *ind = json_object_get(body, "indirection");
    for (size_t k = 0; k < json_array_size(ind); k++) {
        const char *kind;
        json_t *nb;
        if (!exb_node_of(json_array_get(ind, k), &kind, &nb))
            return exb_err(b, HS_INTERNAL, loc, "malformed indirection");
        int at = exb_loc(nb) >= 0 ? exb_loc(nb) : x->loc;
        if (!strcmp(kind, "A_Indices")) {
            const char *pk;
            json_t *pb;
            /* a[i][j]... of a numeric array value: one node (expr_numarr.c) */
            size_t m = 1;
            while (k + m < json_array_size(ind) && exb_node_of(json_array_get(ind, k + m), &pk, &pb) &&
                   !strcmp(pk, "A_Indices"))
                m++;
            if (m > 1 && x->type.t == EX_T_ARRAY && !ex_is_ta(&x->type)) {
                HS_TRY(exb_na_subscripts(b, x, ind, k, m, at, &x));
                k += m - 1;
                continue;
            }
            if (k > 0 && exb_node_of(json_array_get(ind, k - 1), &pk, &pb) && !strcmp(pk, "A_Indices"))
                return exb_err(b, HS_UNSUPPORTED, at, "subscripts of multidimensional arrays are not supported");
            HS_TRY(bind_subscript(b, x, nb, at, &x));
            continue;
        }
        size_t len;
        const char *name = exb_string_node(json_array_get(ind, k), &len);
        if (!name)
            return exb_err(b, HS_UNSUPPORTED, at, "'*' field selection is not supported");
        if (x->kind != EX_COL || !x->field || x->field->type != HS_TYPE_STRUCT) {
            char b1[48];
            return exb_err(b, HS_INVALID, at, "column notation .%s applied to type %s, which is not a composite type",
                          name, exb_tname(&x->type, b1));
        }
        const hs_field *f = NULL;
        for (int i = 0; i < x->field->n_children && !f; i++)
            if (x->field->children[i].name && !strcmp(x->field->children[i].name, name))
                f = &x->field->children[i];
        for (int i = 0; i < x->field->n_children && !f; i++)
            if (x->field->children[i].name && !strcasecmp(x->field->children[i].name, name))
                f = &x->field->children[i];
        if (!f)
            return exb_err(b, HS_NOT_FOUND, at, "could not identify column \"%s\" in record data type", name);
        HS_TRY(exb_struct_field(b, x, f, x->loc, &x));
    }
    *out = x;
    return HS_OK;
}

/* In SQL, `s IS NULL` of a struct s is PostgreSQL's row test: true when
 * every field is null (s itself null included), and `s IS NOT NULL` when
 * every field is not null.  NULL when s is not a struct column with fields. */