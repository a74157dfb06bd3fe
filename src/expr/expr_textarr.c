/*
 * expr/expr_textarr.c - binding and evaluation of text[] values.
 *
 * A text[] is an EX_T_ARRAY of elem PV_E_TEXT, the blob of expr/textarr.h,
 * in the same value slot as the numeric arrays of pgvector.h.  Owns:
 *   ARRAY['a', NULL] and ARRAY[...]::text[]   EX_FN_PV_ARRAY of type text[]
 *   '{a,"b c"}'::text[] and text[]::text      casts (ex_ta_cast, called by
 *                                             expr_pgvector.c's cast rows)
 *   list<string> columns as values            EX_FN_TA_OF_LIST (tags @> ...)
 *   string_to_array, array_append/prepend/cat, ||, a[lo:hi], @> <@ &&
 *   and, given a text[] value, the functions of expr_array.c over list
 *   columns: a[i], cardinality, array_length, array_to_string,
 *   array_position, x op ANY(a).
 * Comparisons (= < ... between text[]) are EX_CMP nodes of mode EX_CM_PV
 * that expr_eval.c's comparison kernel sends to ta_cmp.  NULL rules and
 * errors are PostgreSQL 15's (array_append(NULL, x) is {x}, a[i] outside
 * the array NULL, a slice outside it {}).
 */
#include "expr/expr_int.h"

#include "base/mem.h"
#include "expr/textarr.h"

#include <jansson.h>
#include <string.h>
#include <strings.h>

static ex_ty ta_ty(void)
{
    ex_ty t = exb_ty(EX_T_ARRAY);
    t.elem = PV_E_TEXT;
    return t;
}

static bool is_text_list(const ex_node *x)
{
    return x->kind == EX_COL && x->type.t == EX_T_OTHER && x->field &&
           (x->field->type == HS_TYPE_LIST || x->field->type == HS_TYPE_FIXED_LIST) &&
           x->field->n_children == 1 && x->field->children[0].type == HS_TYPE_STRING;
}

bool exb_ta_is(const ex_node *x)
{
    return ex_is_ta(&x->type) || is_text_list(x);
}

hs_status exb_ta_coerce(ex_binder *b, ex_node **np, bool *ok)
{
    ex_node *x = *np;
    *ok = true;
    if (ex_is_ta(&x->type))
        return HS_OK;
    if (is_text_list(x)) {
        ex_node *n = exb_mk(b, EX_FUNC, ta_ty(), x->loc, 1);
        if (!n)
            return exb_nomem(b);
        n->op = EX_FN_TA_OF_LIST;
        n->args[0] = x;
        *np = n;
        return HS_OK;
    }
    if (x->type.t == EX_T_UNKNOWN || x->type.t == EX_T_NULL)
        return exb_cast_to(b, np, ta_ty(), true);
    *ok = false;
    return HS_OK;
}

hs_status exb_ta_lift(ex_binder *b, ex_node **a, int n)
{
    bool ok;
    for (int i = 0; i < n; i++)
        if (is_text_list(a[i]))
            HS_TRY(exb_ta_coerce(b, &a[i], &ok));
    return HS_OK;
}

/* text, unknown or NULL into text; *ok false for other types */
static hs_status want_text(ex_binder *b, ex_node **np, bool *ok)
{
    ex_t t = (*np)->type.t;
    *ok = t == EX_T_STR || t == EX_T_UNKNOWN || t == EX_T_NULL;
    return *ok && t != EX_T_STR ? exb_cast_to(b, np, exb_ty(EX_T_STR), true) : HS_OK;
}

hs_status exb_ta_array(ex_binder *b, ex_node **a, int n, int loc, ex_node **out)
{
    char b1[48];
    for (int i = 0; i < n; i++) {
        if (a[i]->type.t == EX_T_ARRAY || a[i]->type.t == EX_T_OTHER)
            return exb_err(b, HS_UNSUPPORTED, a[i]->loc >= 0 ? a[i]->loc : loc,
                           "multidimensional arrays are not supported");
        bool ok;
        HS_TRY(want_text(b, &a[i], &ok));
        if (!ok)
            return exb_err(b, HS_INVALID, a[i]->loc >= 0 ? a[i]->loc : loc,
                           "ARRAY types text and %s cannot be matched", exb_tname(&a[i]->type, b1));
    }
    return exb_mk_fn(b, EX_FN_PV_ARRAY, ta_ty(), 0, a, n, loc, out);
}

static hs_status no_op(ex_binder *b, const char *opname, ex_node *l, ex_node *r, int loc)
{
    char b1[48], b2[48];
    return exb_err(b, HS_NOT_FOUND, loc, "operator does not exist: %s %s %s", exb_tname(&l->type, b1),
                   opname, exb_tname(&r->type, b2));
}

hs_status exb_ta_op(ex_binder *b, const char *opname, ex_node *l, ex_node *r, int loc, ex_node **out)
{
    bool okl, okr;
    if (!strcmp(opname, "||")) {
        ex_node *a[2] = {l, r};
        /* text[] || text[] (an unknown literal or NULL is read as text[]);
         * text[] || text and text || text[] append / prepend */
        bool lt = exb_ta_is(l), rt = exb_ta_is(r);
        if (lt && !rt && r->type.t == EX_T_STR) {
            HS_TRY(exb_ta_coerce(b, &a[0], &okl));
            return exb_mk_fn(b, EX_FN_TA_APPEND, ta_ty(), 0, a, 2, loc, out);
        }
        if (rt && !lt && l->type.t == EX_T_STR) {
            a[0] = r;
            a[1] = l;
            HS_TRY(exb_ta_coerce(b, &a[0], &okl));
            return exb_mk_fn(b, EX_FN_TA_APPEND, ta_ty(), 1, a, 2, loc, out);
        }
        HS_TRY(exb_ta_coerce(b, &a[0], &okl));
        HS_TRY(exb_ta_coerce(b, &a[1], &okr));
        if (!okl || !okr)
            return no_op(b, opname, l, r, loc);
        return exb_mk_fn(b, EX_FN_TA_CAT, ta_ty(), 0, a, 2, loc, out);
    }
    int cmp = exb_parse_cmp_op(opname);
    if (cmp < 0)
        return no_op(b, opname, l, r, loc);
    ex_node *l0 = l, *r0 = r;
    HS_TRY(exb_ta_coerce(b, &l, &okl));
    HS_TRY(exb_ta_coerce(b, &r, &okr));
    if (!okl || !okr)
        return no_op(b, opname, l0, r0, loc);
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

hs_status exb_ta_contains(ex_binder *b, bool overlap, ex_node *l, ex_node *r, int loc, ex_node **out)
{
    bool okl, okr;
    ex_node *a[2] = {l, r};
    HS_TRY(exb_ta_coerce(b, &a[0], &okl));
    HS_TRY(exb_ta_coerce(b, &a[1], &okr));
    if (!okl || !okr)
        return no_op(b, overlap ? "&&" : "@>", l, r, loc);
    return exb_mk_fn(b, EX_FN_TA_CONTAINS, exb_ty(EX_T_BOOL), overlap, a, 2, loc, out);
}

hs_status exb_want_int32(ex_binder *b, ex_node **np, const char *what)
{
    ex_t t = (*np)->type.t;
    if (t == EX_T_UNKNOWN || t == EX_T_NULL || t == EX_T_DEC || t == EX_T_FLOAT) {
        /* PostgreSQL's assignment cast to int4 (numeric and floats round) */
        ex_ty i4 = exb_ty(EX_T_INT);
        i4.bits = 32;
        HS_TRY(exb_cast_to(b, np, i4, t == EX_T_UNKNOWN || t == EX_T_NULL));
    }
    if ((*np)->type.t != EX_T_INT)
        return exb_err(b, HS_INVALID, (*np)->loc, "%s must have type integer", what);
    return HS_OK;
}

hs_status exb_ta_subscript(ex_binder *b, ex_node *x, json_t *ind, int loc, ex_node **out)
{
    bool ok;
    HS_TRY(exb_ta_coerce(b, &x, &ok));
    if (!ok)
        return exb_err(b, HS_INTERNAL, loc, "subscript of a non-array");
    if (!json_is_true(json_object_get(ind, "is_slice"))) {
        ex_node *a[2] = {x, NULL};
        HS_TRY(exb_bind(b, json_object_get(ind, "uidx"), &a[1]));
        HS_TRY(exb_want_int32(b, &a[1], "array subscript"));
        return exb_mk_fn(b, EX_FN_ARR_ELEM, exb_ty(EX_T_STR), 0, a, 2, loc, out);
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
        } else {
            a[1 + i] = exb_mk_const(b, exb_ty(EX_T_INT), loc);
            if (!a[1 + i])
                return exb_nomem(b);
        }
    }
    return exb_mk_fn(b, EX_FN_TA_SLICE, ta_ty(), aux, a, 3, loc, out);
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

hs_status exb_ta_func(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n, int loc, bool *done,
                      ex_node **out)
{
    bool ok = true, ok2 = true;
    *done = true;
    switch (f) {
    case EX_FN_TA_SPLIT:
        for (int i = 0; i < n && ok; i++)
            HS_TRY(want_text(b, &a[i], &ok));
        if (!ok)
            return no_fn(b, fn, a, n, loc);
        return exb_mk_fn(b, f, ta_ty(), 0, a, n, loc, out);
    case EX_FN_TA_APPEND: {
        bool pre = !strcasecmp(fn, "array_prepend");
        ex_node *x[2] = {pre ? a[1] : a[0], pre ? a[0] : a[1]};
        /* (numeric arrays: expr_numarr.c, before this) */
        if (!exb_ta_is(x[0]) && x[0]->type.t != EX_T_NULL && x[0]->type.t != EX_T_UNKNOWN)
            return x[0]->type.t == EX_T_OTHER
                ? exb_err(b, HS_UNSUPPORTED, loc, "function %s of this array is not supported", fn)
                : no_fn(b, fn, a, n, loc);
        HS_TRY(exb_ta_coerce(b, &x[0], &ok));
        HS_TRY(want_text(b, &x[1], &ok2));
        if (!ok || !ok2)
            return no_fn(b, fn, a, n, loc);
        return exb_mk_fn(b, f, ta_ty(), pre, x, 2, loc, out);
    }
    case EX_FN_TA_CAT:
        HS_TRY(exb_ta_coerce(b, &a[0], &ok));
        HS_TRY(exb_ta_coerce(b, &a[1], &ok2));
        if (!ok || !ok2)
            return no_fn(b, fn, a, n, loc);
        return exb_mk_fn(b, f, ta_ty(), 0, a, 2, loc, out);
    case EX_FN_CARDINALITY: case EX_FN_ARRAY_LENGTH: case EX_FN_ARRAY_TO_STRING:
    case EX_FN_ARRAY_POSITION: {
        if (!ex_is_ta(&a[0]->type)) {
            *done = false;
            return HS_OK;
        }
        ex_ty rt = exb_ty(EX_T_INT);
        rt.bits = 32;
        if (f == EX_FN_ARRAY_LENGTH || (f == EX_FN_ARRAY_POSITION && n == 3))
            HS_TRY(exb_want_int32(b, &a[n - 1], "argument"));
        if (f == EX_FN_ARRAY_TO_STRING) {
            for (int i = 1; i < n && ok; i++)
                HS_TRY(want_text(b, &a[i], &ok));
            rt = exb_ty(EX_T_STR);
        }
        if (f == EX_FN_ARRAY_POSITION)
            HS_TRY(want_text(b, &a[1], &ok));
        if (!ok)
            return no_fn(b, fn, a, n, loc);
        return exb_mk_fn(b, f, rt, 0, a, n, loc, out);
    }
    case EX_FN_NA_POSITION: case EX_FN_NA_REMOVE: case EX_FN_NA_REPLACE: {
        /* array_positions / array_remove / array_replace of a text[] */
        if (!exb_ta_is(a[0])) {
            *done = false;
            return HS_OK;
        }
        HS_TRY(exb_ta_coerce(b, &a[0], &ok));
        for (int i = 1; i < n && ok; i++)
            HS_TRY(want_text(b, &a[i], &ok));
        if (!ok)
            return no_fn(b, fn, a, n, loc);
        ex_ty rt = ta_ty();
        if (f == EX_FN_NA_POSITION) {
            rt = exb_ty(EX_T_ARRAY);
            rt.elem = PV_E_INT4;
        }
        ex_fn tf = f == EX_FN_NA_POSITION ? EX_FN_TA_POSITIONS : f == EX_FN_NA_REMOVE ? EX_FN_TA_REMOVE
                                                                                       : EX_FN_TA_REPLACE;
        return exb_mk_fn(b, tf, rt, 0, a, n, loc, out);
    }
    default:
        *done = false;
        return HS_OK;
    }
}

/* ------------------------------------------------------------------ */
/* evaluation                                                          */

static hs_status ta_fail(ex_ctx *c, const ex_node *n, hs_status st, const hs_error *e)
{
    if (st == HS_NOMEM || (e && e->code == HS_NOMEM))
        return hs_err_nomem(c->err, 0);
    if (st == HS_UNSUPPORTED)
        return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc, "%s", e->msg);
    if (e)
        return ex_fail(c, n, "%s", e->msg);
    return ex_fail(c, n, "array size exceeds the maximum allowed (%d)", TA_MAX_ELEMS);
}

static pv_val pv_of(const ex_str *s)
{
    pv_val v = {s->p, s->n};
    return v;
}

static hs_status put(ex_ctx *c, const ex_node *n, ta_builder *tb, ex_vec *out, int j)
{
    pv_val v;
    hs_status st = ta_b_done(tb, c->arena, &v);
    if (st != HS_OK)
        return ta_fail(c, n, st, NULL);
    out->nul[j] = 0;
    out->v.s[j].p = v.p;
    out->v.s[j].n = v.n;
    return HS_OK;
}

/* list<string> column rows into text[] blobs */
static hs_status ev_of_list(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    const pr_col_ref *r;
    HS_TRY(ex_col_ref(c, n->args[0], &r));
    const hs_column *col = r ? r->col : NULL;
    bool fixed = col && col->type == HS_TYPE_FIXED_LIST;
    if (col && ((col->type != HS_TYPE_LIST && !fixed) || col->n_children != 1 || !col->children[0] ||
                col->children[0]->type != HS_TYPE_STRING))
        return ex_fail(c, n, "column \"%s\" is %s in the batch, not a list of strings",
                       n->args[0]->name, hs_type_name(col->type));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        int64_t row = c->base + j;
        out->nul[j] = 1;
        if (!col || !pr_ref_valid(r, row))
            continue;
        const hs_column *ch = col->children[0];
        int64_t start = fixed ? row * col->width : HS_COL_OFFSETS(col)[row];
        int64_t end = fixed ? start + col->width : HS_COL_OFFSETS(col)[row + 1];
        if (start < 0 || end < start || end > ch->length)
            return ex_fail(c, n, "column \"%s\": list offsets past its elements", n->args[0]->name);
        const int32_t *o = HS_COL_OFFSETS(ch);
        ta_builder tb = {0};
        hs_status st = HS_OK;
        for (int64_t i = start; i < end && st == HS_OK; i++) {
            bool valid = hs_col_is_valid(ch, i);
            size_t len = valid ? (size_t)(o[i + 1] - o[i]) : 0;
            /* no value bytes at all when every string is empty: data is NULL */
            st = ta_b_add(&tb, len ? ch->values.data + o[i] : NULL, len, !valid);
        }
        if (st != HS_OK) {
            ta_b_free(&tb);
            return ta_fail(c, n, st, NULL);
        }
        HS_TRY(put(c, n, &tb, out, j));
    }
    return HS_OK;
}

/* string_to_array(s, sep[, null_text]) of row j */
static hs_status split_row(ex_ctx *c, const ex_node *n, const ex_vec *a, int j, ex_vec *out)
{
    const ex_str *s = &a[0].v.s[j];
    bool has_null_text = n->n_args > 2 && !a[2].nul[j];
    const ex_str *nt = has_null_text ? &a[2].v.s[j] : NULL;
    ta_builder tb = {0};
    hs_status st = HS_OK;
#define ADD(p_, n_) do { \
        bool isn_ = nt && nt->n == (n_) && ((n_) == 0 || !memcmp(nt->p, (p_), (n_))); \
        st = ta_b_add(&tb, (p_), (n_), isn_); \
    } while (0)
    if (s->n == 0) {
        /* an empty string: an empty array */
    } else if (a[1].nul[j]) {   /* each character an element */
        for (size_t i = 0; i < s->n && st == HS_OK;) {
            size_t len = 1;
            uint8_t b0 = s->p[i];
            if (b0 >= 0xF0) len = 4;
            else if (b0 >= 0xE0) len = 3;
            else if (b0 >= 0xC0) len = 2;
            if (i + len > s->n)
                len = s->n - i;
            ADD(s->p + i, len);
            i += len;
        }
    } else if (a[1].v.s[j].n == 0) {
        ADD(s->p, s->n);
    } else {
        const ex_str *sep = &a[1].v.s[j];
        size_t from = 0;
        for (size_t i = 0; i + sep->n <= s->n && st == HS_OK;) {
            if (!memcmp(s->p + i, sep->p, sep->n)) {
                ADD(s->p + from, i - from);
                i += sep->n;
                from = i;
            } else {
                i++;
            }
        }
        if (st == HS_OK)
            ADD(s->p + from, s->n - from);
    }
#undef ADD
    if (st != HS_OK) {
        ta_b_free(&tb);
        return ta_fail(c, n, st, NULL);
    }
    return put(c, n, &tb, out, j);
}

/* ex_array_join's element text of a text[] (ctx: its pv_val) */
static hs_status ta_elem_text(ex_ctx *c, void *ctx, int64_t i, bool *valid, ex_str *s)
{
    (void)c;
    *valid = ta_get(*(const pv_val *)ctx, i, &s->p, &s->n);
    return HS_OK;
}

/* array_to_string / array_position of row j */
static hs_status scan_row(ex_ctx *c, const ex_node *n, pv_val v, const ex_vec *a, int j, ex_vec *out)
{
    int64_t len = ta_len(v);
    if (n->op == EX_FN_ARRAY_POSITION) {
        int64_t from = 1;
        if (n->n_args > 2) {
            if (a[2].nul[j])
                return ex_fail(c, n, "initial position must not be null");
            from = a[2].v.i[j] < 1 ? 1 : a[2].v.i[j];
        }
        out->nul[j] = 1;
        for (int64_t i = from - 1; i < len; i++) {
            const uint8_t *p;
            size_t m;
            bool valid = ta_get(v, i, &p, &m);
            bool hit = a[1].nul[j] ? !valid
                                   : valid && m == a[1].v.s[j].n && (m == 0 || !memcmp(p, a[1].v.s[j].p, m));
            if (hit) {
                out->nul[j] = 0;
                out->v.i[j] = i + 1;
                break;
            }
        }
        return HS_OK;
    }
    if (a[1].nul[j]) {
        out->nul[j] = 1;
        return HS_OK;
    }
    bool has_nt = n->n_args > 2 && !a[2].nul[j];
    return ex_array_join(c, len, ta_elem_text, &v, &a[1].v.s[j], has_nt ? &a[2].v.s[j] : NULL,
                         out, j);
}

/* x op ANY / ALL (a) of a text[] a (args: a, x) */
static void any_row(const ex_node *n, pv_val v, const ex_vec *x, int j, ex_vec *out)
{
    bool all = n->neg, saw_null = false;
    int64_t len = ta_len(v);
    for (int64_t i = 0; i < len; i++) {
        const uint8_t *p;
        size_t m;
        if (x->nul[j] || !ta_get(v, i, &p, &m)) {
            saw_null = true;
            continue;
        }
        const ex_str *s = &x->v.s[j];
        size_t mm = m < s->n ? m : s->n;
        int cm = mm ? memcmp(s->p, p, mm) : 0;
        cm = cm ? (cm < 0 ? -1 : 1) : s->n < m ? -1 : s->n > m;   /* x vs elem */
        bool r = ex_cmp_res(n->aux, cm);
        if (r != all) {
            out->nul[j] = 0;
            out->v.b[j] = r;
            return;
        }
    }
    out->nul[j] = saw_null;
    out->v.b[j] = all;
}

/* array_positions / array_remove / array_replace of row j (a NULL x finds
 * the NULL elements: IS NOT DISTINCT FROM) */
static hs_status search_row(ex_ctx *c, const ex_node *n, pv_val v, const ex_vec *a, int j, ex_vec *out)
{
    int64_t len = ta_len(v);
    bool xn = a[1].nul[j];
    const ex_str *x = &a[1].v.s[j];
    ta_builder tb = {0};
    hs_status st = HS_OK;
    int64_t hits = 0;
    int64_t *pos = n->op == EX_FN_TA_POSITIONS ? hs_arena_alloc(c->arena, sizeof *pos * (size_t)(len ? len : 1)) : NULL;
    if (n->op == EX_FN_TA_POSITIONS && !pos)
        return hs_err_nomem(c->err, sizeof *pos * (size_t)len);
    for (int64_t i = 0; i < len && st == HS_OK; i++) {
        const uint8_t *p;
        size_t m;
        bool valid = ta_get(v, i, &p, &m);
        bool hit = xn ? !valid : valid && m == x->n && (m == 0 || !memcmp(p, x->p, m));
        if (n->op == EX_FN_TA_POSITIONS) {
            if (hit)
                pos[hits++] = i + 1;
        } else if (hit && n->op == EX_FN_TA_REPLACE) {
            bool yn = a[2].nul[j];
            st = ta_b_add(&tb, yn ? NULL : a[2].v.s[j].p, yn ? 0 : a[2].v.s[j].n, yn);
        } else if (!hit) {
            st = ta_b_add(&tb, valid ? p : NULL, valid ? m : 0, !valid);
        }
    }
    if (n->op == EX_FN_TA_POSITIONS) {   /* an integer[] (pgvector.h's blob) */
        hs_error e = {0};
        pv_val r;
        if (pv_arr_new(c->arena, hits, &r, NULL, NULL, NULL, &e) != HS_OK)
            return ta_fail(c, n, e.code, &e);
        for (int64_t k = 0; k < hits; k++)
            pv_arr_set_int(PV_E_INT4, r, k, pos[k]);
        out->nul[j] = 0;
        out->v.s[j].p = r.p;
        out->v.s[j].n = r.n;
        return HS_OK;
    }
    if (st != HS_OK) {
        ta_b_free(&tb);
        return ta_fail(c, n, st, NULL);
    }
    return put(c, n, &tb, out, j);
}

/* the slice a[lo:hi] of row j */
static hs_status slice_row(ex_ctx *c, const ex_node *n, pv_val v, const ex_vec *a, int j, ex_vec *out)
{
    int64_t len = ta_len(v);
    int64_t lo = (n->aux & 1) ? a[1].v.i[j] : 1, hi = (n->aux & 2) ? a[2].v.i[j] : len;
    if (lo < 1)
        lo = 1;
    if (hi > len)
        hi = len;
    ta_builder tb = {0};
    hs_status st = lo <= hi ? ta_b_add_range(&tb, v, lo - 1, hi) : HS_OK;
    if (st != HS_OK) {
        ta_b_free(&tb);
        return ta_fail(c, n, st, NULL);
    }
    return put(c, n, &tb, out, j);
}

hs_status ex_ev_ta_fn(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_fn fn = (ex_fn)n->op;
    HS_TRY(ex_vec_new(c, n->type.t, out));
    if (fn == EX_FN_TA_OF_LIST)
        return ev_of_list(c, n, sel, ns, out);
    int na = n->n_args;
    ex_vec *a = hs_arena_calloc(c->arena, (size_t)(na ? na : 1), sizeof *a);
    if (!a)
        return hs_err_nomem(c->err, sizeof *a);
    for (int i = 0; i < na; i++)
        HS_TRY(ex_ev(c, n->args[i], sel, ns, &a[i]));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->nul[j] = 1;
        if (fn == EX_FN_PV_ARRAY) {   /* ARRAY[...] of text */
            ta_builder tb = {0};
            hs_status st = HS_OK;
            for (int i = 0; i < na && st == HS_OK; i++)
                st = ta_b_add(&tb, a[i].v.s[j].p, a[i].nul[j] ? 0 : a[i].v.s[j].n, a[i].nul[j]);
            if (st != HS_OK) {
                ta_b_free(&tb);
                return ta_fail(c, n, st, NULL);
            }
            HS_TRY(put(c, n, &tb, out, j));
            continue;
        }
        if (fn == EX_FN_TA_APPEND || fn == EX_FN_TA_CAT) {
            /* array_append(NULL, x) is {x}; array_cat(a, NULL) is a; NULL when both are */
            bool n0 = a[0].nul[j], n1 = a[1].nul[j];
            if (fn == EX_FN_TA_CAT && n0 && n1)
                continue;
            ta_builder tb = {0};
            hs_status st = HS_OK;
            pv_val v0 = n0 ? (pv_val){NULL, 0} : pv_of(&a[0].v.s[j]);
            if (fn == EX_FN_TA_APPEND && n->aux)   /* prepend: x first */
                st = ta_b_add(&tb, a[1].v.s[j].p, n1 ? 0 : a[1].v.s[j].n, n1);
            if (st == HS_OK && !n0)
                st = ta_b_add_range(&tb, v0, 0, ta_len(v0));
            if (st == HS_OK && fn == EX_FN_TA_APPEND && !n->aux)
                st = ta_b_add(&tb, a[1].v.s[j].p, n1 ? 0 : a[1].v.s[j].n, n1);
            if (st == HS_OK && fn == EX_FN_TA_CAT && !n1)
                st = ta_b_add_range(&tb, pv_of(&a[1].v.s[j]), 0, ta_len(pv_of(&a[1].v.s[j])));
            if (st != HS_OK) {
                ta_b_free(&tb);
                return ta_fail(c, n, st, NULL);
            }
            HS_TRY(put(c, n, &tb, out, j));
            continue;
        }
        if (fn == EX_FN_TA_SPLIT) {
            if (!a[0].nul[j])
                HS_TRY(split_row(c, n, a, j, out));
            continue;
        }
        if (fn == EX_FN_ARRAY_POSITION && !a[0].nul[j]) {
            HS_TRY(scan_row(c, n, pv_of(&a[0].v.s[j]), a, j, out));
            continue;
        }
        if (fn == EX_FN_LIST_ANY) {
            if (!a[0].nul[j])
                any_row(n, pv_of(&a[0].v.s[j]), &a[1], j, out);
            continue;
        }
        if (fn == EX_FN_TA_POSITIONS || fn == EX_FN_TA_REMOVE || fn == EX_FN_TA_REPLACE) {
            if (!a[0].nul[j])
                HS_TRY(search_row(c, n, pv_of(&a[0].v.s[j]), a, j, out));
            continue;
        }
        bool any_null = false;
        for (int i = 0; i < na; i++)
            any_null |= a[i].nul[j] && !(fn == EX_FN_TA_SLICE && i > 0 && !(n->aux & (1 << (i - 1))));
        if (any_null && !(fn == EX_FN_ARRAY_TO_STRING && !a[0].nul[j] && !a[1].nul[j]))
            continue;
        pv_val v = pv_of(&a[0].v.s[j]);
        int64_t len = ta_len(v);
        switch (fn) {
        case EX_FN_CARDINALITY:
            out->nul[j] = 0;
            out->v.i[j] = len;
            break;
        case EX_FN_ARRAY_LENGTH:
            out->nul[j] = len == 0 || a[1].v.i[j] != 1;
            out->v.i[j] = len;
            break;
        case EX_FN_ARRAY_TO_STRING:
            HS_TRY(scan_row(c, n, v, a, j, out));
            break;
        case EX_FN_ARR_ELEM: {
            int64_t i = a[1].v.i[j];
            const uint8_t *p;
            size_t m;
            if (i >= 1 && i <= len && ta_get(v, i - 1, &p, &m)) {
                out->nul[j] = 0;
                out->v.s[j].p = p;
                out->v.s[j].n = m;
            }
            break;
        }
        case EX_FN_TA_SLICE:
            HS_TRY(slice_row(c, n, v, a, j, out));
            break;
        case EX_FN_TA_CONTAINS:
            out->nul[j] = 0;
            out->v.b[j] = ta_contains(v, pv_of(&a[1].v.s[j]), n->aux != 0);
            break;
        default:
            return hs_err_set(c->err, HS_INTERNAL, "expression: unknown text[] function");
        }
    }
    return HS_OK;
}

hs_status ex_ta_cast(ex_ctx *c, const ex_node *n, const ex_ty *ft, const ex_ty *tt, const ex_str *v,
                     ex_str *out)
{
    hs_error e = {0};
    pv_val r;
    hs_buf bf = {0};
    hs_status st;
    if (ex_is_ta(tt) && ex_is_ta(ft)) {
        *out = *v;
        return HS_OK;
    }
    if (ex_is_ta(tt)) {   /* from text, unknown or a numeric array (through its text) */
        const char *s = (const char *)v->p;
        size_t len = v->n;
        if (ft->t == EX_T_ARRAY) {
            st = pv_arr_out((pv_elem)ft->elem, pv_of(v), &bf);
            if (st != HS_OK) {
                hs_buf_free(&bf);
                return hs_err_nomem(c->err, bf.len);
            }
            s = (const char *)bf.data;
            len = bf.len;
        }
        st = ta_in(s ? s : "", len, c->arena, &r, &e);
        hs_buf_free(&bf);
        if (st != HS_OK)
            return ta_fail(c, n, st, &e);
        out->p = r.p;
        out->n = r.n;
        return HS_OK;
    }
    /* text[] to text or to a numeric array (through its text) */
    st = ta_out(pv_of(v), &bf);
    if (st != HS_OK) {
        hs_buf_free(&bf);
        return hs_err_nomem(c->err, bf.len);
    }
    if (tt->t == EX_T_STR || tt->t == EX_T_UNKNOWN) {
        st = ex_put_str(c, out, (const char *)bf.data, bf.len);
        hs_buf_free(&bf);
        return st;
    }
    st = pv_arr_in((pv_elem)tt->elem, (const char *)bf.data, bf.len, c->arena, &r, &e);
    hs_buf_free(&bf);
    if (st != HS_OK)
        return ta_fail(c, n, st, &e);
    out->p = r.p;
    out->n = r.n;
    return HS_OK;
}
