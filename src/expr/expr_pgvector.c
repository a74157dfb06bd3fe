/*
 * expr/expr_pgvector.c - pgvector's types (expr/pgvector.h) in expression
 * evaluation: their column forms, text, casts, function kernels and result
 * columns.  expr_eval.c hands every row of these types here (ex_pv_*); the
 * binding is expr_bindpv.c's.
 *
 * Column forms (docs/sql.md, "pgvector types"):
 *   vector     list<float32> or fixed_size_list<float32>[n] (vector(n))
 *   halfvec    list<float16> or fixed_size_list<float16>[n]
 *   sparsevec  struct<dim: int32, indices: list<int32> (0-based, ascending),
 *                     values: list<float32>>
 *   bit        string of '0' / '1' with field metadata pgvector.type = bit
 * Result columns carry the metadata key "pgvector.type" (vector, halfvec,
 * sparsevec, bit) so that they read back as the same type.  Values are
 * pgvector blobs held as ex_str in the chunk's vectors.
 */
#include "expr/expr_int.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/jsonl.h"
#include "expr/pgvector.h"
#include "expr/textarr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PV_META EX_PV_META

int ex_pv_type(ex_t t)
{
    switch (t) {
    case EX_T_VEC: return PV_VECTOR;
    case EX_T_HALFVEC: return PV_HALFVEC;
    case EX_T_SPARSEVEC: return PV_SPARSEVEC;
    case EX_T_BIT: return PV_BIT;
    default: return 0;
    }
}

static const hs_field *pv_child(const hs_field *f, const char *name)
{
    for (int i = 0; i < f->n_children; i++)
        if (f->children[i].name && strcmp(f->children[i].name, name) == 0)
            return &f->children[i];
    return NULL;
}

bool ex_pv_type_of_field(const hs_field *f, ex_ty *out)
{
    memset(out, 0, sizeof *out);
    if ((f->type == HS_TYPE_LIST || f->type == HS_TYPE_FIXED_LIST) && f->n_children == 1 &&
        (f->children[0].type == HS_TYPE_FLOAT32 || f->children[0].type == HS_TYPE_FLOAT16)) {
        out->t = f->children[0].type == HS_TYPE_FLOAT32 ? EX_T_VEC : EX_T_HALFVEC;
        out->dim = f->type == HS_TYPE_FIXED_LIST ? f->width : 0;
        return true;
    }
    if (f->type == HS_TYPE_STRUCT && f->n_children == 3) {
        const hs_field *d = pv_child(f, "dim"), *ix = pv_child(f, "indices"), *v = pv_child(f, "values");
        if (d && ix && v && d->type == HS_TYPE_INT32 && ix->type == HS_TYPE_LIST &&
            ix->n_children == 1 && ix->children[0].type == HS_TYPE_INT32 && v->type == HS_TYPE_LIST &&
            v->n_children == 1 && v->children[0].type == HS_TYPE_FLOAT32) {
            out->t = EX_T_SPARSEVEC;
            return true;
        }
    }
    const char *m = hs_field_get_meta(f, PV_META);
    if (f->type == HS_TYPE_STRING && m && strcmp(m, "bit") == 0) {
        out->t = EX_T_BIT;
        return true;
    }
    return false;
}

static hs_status pv_list_field(hs_field *out, const char *name, hs_type elem, bool elem_null)
{
    hs_field e;
    hs_field_init(&e, "item", elem, elem_null);
    if (!e.name)
        return HS_NOMEM;
    hs_field_init_list(out, name, true, &e);
    if (!out->name || out->n_children != 1) {
        hs_field_clear(out);
        return HS_NOMEM;
    }
    return HS_OK;
}

hs_status ex_pv_type_to_field(const ex_ty *t, const char *name, hs_field *out)
{
    hs_status st;
    memset(out, 0, sizeof *out);
    switch (t->t) {
    case EX_T_VEC: st = pv_list_field(out, name, HS_TYPE_FLOAT32, false); break;
    case EX_T_HALFVEC: st = pv_list_field(out, name, HS_TYPE_FLOAT16, false); break;
    case EX_T_BIT:
        hs_field_init(out, name, HS_TYPE_STRING, true);
        st = out->name ? HS_OK : HS_NOMEM;
        break;
    case EX_T_ARRAY:
        if (t->elem == PV_E_TEXT)   /* text[]: list<string> */
            return pv_list_field(out, name, HS_TYPE_STRING, true);
        /* a plain list (no pgvector.type): real[] reads back as a vector */
        return pv_list_field(out, name, t->elem == PV_E_INT4 ? HS_TYPE_INT32
                                        : t->elem == PV_E_INT8 ? HS_TYPE_INT64
                                        : t->elem == PV_E_FLOAT4 ? HS_TYPE_FLOAT32 : HS_TYPE_FLOAT64,
                             true);
    case EX_T_SPARSEVEC: {
        hs_field_init(out, name, HS_TYPE_STRUCT, true);
        if (!out->name)
            return HS_NOMEM;
        hs_field d, ix, v;
        hs_field_init(&d, "dim", HS_TYPE_INT32, false);
        st = d.name ? hs_field_add_child(out, &d) : HS_NOMEM;
        if (st == HS_OK)
            st = pv_list_field(&ix, "indices", HS_TYPE_INT32, false);
        if (st == HS_OK)
            st = hs_field_add_child(out, &ix);
        if (st == HS_OK)
            st = pv_list_field(&v, "values", HS_TYPE_FLOAT32, false);
        if (st == HS_OK)
            st = hs_field_add_child(out, &v);
        break;
    }
    default: return HS_UNSUPPORTED;
    }
    if (st == HS_OK)
        st = hs_field_set_meta(out, PV_META, pv_type_name((pv_type)ex_pv_type(t->t)));
    if (st != HS_OK) {
        hs_field_clear(out);
        return HS_NOMEM;
    }
    return HS_OK;
}

static hs_status pv_fail(ex_ctx *c, const ex_node *n, const hs_error *e)
{
    if (e->code == HS_NOMEM)
        return hs_err_nomem(c->err, 0);
    if (e->code == HS_UNSUPPORTED)   /* a multidimensional array, ... */
        return ex_err_at(c->err, HS_UNSUPPORTED, c->e->text, n->loc, "%s", e->msg);
    return ex_fail(c, n, "%s", e->msg);
}

/* A copy of the list rows [o0, o1) of child (element es bytes) as a blob:
 * zero copy when the child has no nulls. */
static hs_status pv_list_blob(ex_ctx *c, const ex_node *n, const hs_column *child, int64_t o0, int64_t o1,
                              size_t es, ex_str *out)
{
    if (o1 < o0 || o1 > child->length || !child->values.data)
        return ex_fail(c, n, "column \"%s\": malformed list", n->name);
    out->p = child->values.data + es * (size_t)o0;
    out->n = es * (size_t)(o1 - o0);
    return HS_OK;
}

hs_status ex_pv_read_col(ex_ctx *c, const ex_node *n, const hs_column *col, const ex_sel *sel,
                             int ns, ex_vec *out)
{
    pv_type t = (pv_type)ex_pv_type(n->type.t);
    int64_t base = c->base;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        int64_t row = base + j;
        if (out->nul[j])
            continue;
        ex_str *v = &out->v.s[j];
        if (t == PV_VECTOR || t == PV_HALFVEC) {
            size_t es = t == PV_VECTOR ? 4 : 2;
            if (col->n_children != 1)
                return ex_fail(c, n, "column \"%s\" is not a list", n->name);
            if (col->type == HS_TYPE_FIXED_LIST)
                HS_TRY(pv_list_blob(c, n, col->children[0], row * col->width, (row + 1) * col->width, es, v));
            else if (col->type == HS_TYPE_LIST)
                HS_TRY(pv_list_blob(c, n, col->children[0], HS_COL_OFFSETS(col)[row],
                                    HS_COL_OFFSETS(col)[row + 1], es, v));
            else
                return ex_fail(c, n, "column \"%s\" is not a list", n->name);
            int64_t dim = (int64_t)(v->n / es);
            if (dim < 1 || dim > PV_VECTOR_MAX_DIM)
                return ex_fail(c, n, "column \"%s\" row %lld: %lld elements are not a %s", n->name,
                            (long long)row, (long long)dim, pv_type_name(t));
            continue;
        }
        if (t == PV_SPARSEVEC) {
            if (col->type != HS_TYPE_STRUCT || col->n_children != 3)
                return ex_fail(c, n, "column \"%s\" is not a sparsevec struct", n->name);
            /* children in the field's order: find them by the field's names */
            const hs_field *f = n->field;
            const hs_column *dc = NULL, *ic = NULL, *vc = NULL;
            for (int i = 0; f && i < f->n_children && i < 3; i++) {
                const char *nm = f->children[i].name;
                if (!strcmp(nm, "dim"))
                    dc = col->children[i];
                else if (!strcmp(nm, "indices"))
                    ic = col->children[i];
                else if (!strcmp(nm, "values"))
                    vc = col->children[i];
            }
            if (!dc || !ic || !vc || dc->type != HS_TYPE_INT32 || ic->type != HS_TYPE_LIST ||
                vc->type != HS_TYPE_LIST || ic->n_children != 1 || vc->n_children != 1 ||
                !hs_col_is_valid(dc, row) || !hs_col_is_valid(ic, row) || !hs_col_is_valid(vc, row))
                return ex_fail(c, n, "column \"%s\" row %lld is not a sparsevec", n->name, (long long)row);
            ex_str is = {0}, vs = {0};
            HS_TRY(pv_list_blob(c, n, ic->children[0], HS_COL_OFFSETS(ic)[row], HS_COL_OFFSETS(ic)[row + 1], 4, &is));
            HS_TRY(pv_list_blob(c, n, vc->children[0], HS_COL_OFFSETS(vc)[row], HS_COL_OFFSETS(vc)[row + 1], 4, &vs));
            if (is.n != vs.n || is.n / 4 > INT32_MAX / 8)
                return ex_fail(c, n, "column \"%s\" row %lld is not a sparsevec", n->name, (long long)row);
            int32_t hdr[2] = {HS_COL_VALUES(dc, int32_t)[row], (int32_t)(is.n / 4)};
            uint8_t *p = hs_arena_alloc(c->arena, 8 + is.n + vs.n);
            if (!p)
                return hs_err_nomem(c->err, 8 + is.n + vs.n);
            memcpy(p, hdr, 8);
            if (is.n) {
                memcpy(p + 8, is.p, is.n);
                memcpy(p + 8 + is.n, vs.p, vs.n);
            }
            v->p = p;
            v->n = 8 + is.n + vs.n;
            pv_val pv = {v->p, v->n};
            if (!pv_valid(PV_SPARSEVEC, pv))
                return ex_fail(c, n, "column \"%s\" row %lld is not a valid sparsevec", n->name, (long long)row);
            continue;
        }
        /* bit: '0'/'1' text */
        if (col->type != HS_TYPE_STRING || !col->values.data)
            return ex_fail(c, n, "column \"%s\" is not a bit string column", n->name);
        const int32_t *o = HS_COL_OFFSETS(col);
        hs_error e = {0};
        pv_val pv;
        if (pv_in(PV_BIT, (const char *)col->values.data + o[row], (size_t)(o[row + 1] - o[row]), -1,
                  c->arena, &pv, &e) != HS_OK)
            return pv_fail(c, n, &e);
        v->p = pv.p;
        v->n = pv.n;
    }
    return HS_OK;
}

hs_status ex_pv_text(ex_ctx *c, const ex_ty *t, const ex_str *v, ex_str *dst)
{
    hs_buf b = {0};
    pv_val pv = {v->p, v->n};
    hs_status st = ex_is_ta(t) ? ta_out(pv, &b)
                 : t->t == EX_T_ARRAY ? pv_arr_out((pv_elem)t->elem, pv, &b)
                                      : pv_out((pv_type)ex_pv_type(t->t), pv, &b);
    if (st == HS_OK)
        st = ex_put_str(c, dst, (const char *)b.data, b.len);
    else
        st = hs_err_nomem(c->err, b.len);
    hs_buf_free(&b);
    return st;
}

/* bit(n) length coercion of an explicit cast: truncate or zero-pad. */
static hs_status pv_bit_resize(ex_ctx *c, const ex_str *v, int32_t len, ex_str *out)
{
    int32_t have;
    memcpy(&have, v->p, 4);
    size_t nb = ((size_t)len + 7) / 8;
    uint8_t *p = hs_arena_calloc(c->arena, 4 + nb, 1);
    if (!p)
        return hs_err_nomem(c->err, 4 + nb);
    memcpy(p, &len, 4);
    for (int32_t i = 0; i < len && i < have; i++)
        if ((v->p[4 + i / 8] >> (7 - i % 8)) & 1)
            p[4 + i / 8] |= (uint8_t)(0x80 >> (i % 8));
    out->p = p;
    out->n = 4 + nb;
    return HS_OK;
}

hs_status ex_pv_cast_rows(ex_ctx *c, const ex_node *n, const ex_ty *ft, const ex_vec *a,
                              const ex_sel *sel, int ns, ex_vec *out)
{
    const ex_ty *tt = &n->type;
    pv_type to = (pv_type)ex_pv_type(tt->t), from = (pv_type)ex_pv_type(ft->t);
    int32_t typmod = tt->dim > 0 ? tt->dim : -1;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->nul[j] = a->nul[j];
        if (a->nul[j])
            continue;
        hs_error e = {0};
        pv_val v, r;
        if (tt->t == EX_T_STR || tt->t == EX_T_UNKNOWN) {
            HS_TRY(ex_pv_text(c, ft, &a->v.s[j], &out->v.s[j]));
            continue;
        }
        if (ex_is_ta(tt) || ex_is_ta(ft)) {   /* text[]: expr_textarr.c */
            HS_TRY(ex_ta_cast(c, n, ft, tt, &a->v.s[j], &out->v.s[j]));
            continue;
        }
        v.p = a->v.s[j].p;
        v.n = a->v.s[j].n;
        if (tt->t == EX_T_ARRAY || ft->t == EX_T_ARRAY) {
            hs_status st;
            if (tt->t == EX_T_ARRAY && (ft->t == EX_T_STR || ft->t == EX_T_UNKNOWN))
                st = pv_arr_in((pv_elem)tt->elem, (const char *)v.p, v.n, c->arena, &r, &e);
            else if (tt->t == EX_T_ARRAY && ft->t == EX_T_ARRAY)
                st = pv_arr_cast((pv_elem)ft->elem, (pv_elem)tt->elem, v, c->arena, &r, &e);
            else if (tt->t == EX_T_ARRAY)
                st = pv_to_arr(from, v, c->arena, &r, &e);
            else
                st = pv_arr_to(to, (pv_elem)ft->elem, v, typmod, c->arena, &r, &e);
            if (st != HS_OK)
                return pv_fail(c, n, &e);
            out->v.s[j].p = r.p;
            out->v.s[j].n = r.n;
            continue;
        }
        if (!from && (ft->t == EX_T_STR || ft->t == EX_T_UNKNOWN)) {
            const ex_str *s = &a->v.s[j];
            if (pv_in(to, (const char *)s->p, s->n, to == PV_BIT ? -1 : typmod, c->arena, &r, &e) != HS_OK)
                return pv_fail(c, n, &e);
        } else if (from == to) {
            v.p = a->v.s[j].p;
            v.n = a->v.s[j].n;
            if (pv_check_typmod(to, v, to == PV_BIT ? -1 : typmod, &e) != HS_OK)
                return pv_fail(c, n, &e);
            r = v;
        } else if (from && to && from != PV_BIT && to != PV_BIT) {
            v.p = a->v.s[j].p;
            v.n = a->v.s[j].n;
            if (pv_convert(from, to, v, typmod, c->arena, &r, &e) != HS_OK)
                return pv_fail(c, n, &e);
        } else {
            char b1[48], b2[48];
            return ex_fail(c, n, "cannot cast type %s to %s", ex_type_name(ft, b1, sizeof b1),
                        ex_type_name(tt, b2, sizeof b2));
        }
        out->v.s[j].p = r.p;
        out->v.s[j].n = r.n;
        if (to == PV_BIT && tt->dim > 0 && (int64_t)pv_dims(PV_BIT, r) != tt->dim)
            HS_TRY(pv_bit_resize(c, &out->v.s[j], tt->dim, &out->v.s[j]));
    }
    return HS_OK;
}

/* ARRAY[x, y, ...] of numbers (INT, FLOAT or DEC arguments; text, read by
 * the element's input) of element kind n->type.elem */
static hs_status pv_ev_array(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_vec_new(c, EX_T_ARRAY, out));
    pv_elem el = (pv_elem)n->type.elem;
    ex_vec *a = hs_arena_alloc(c->arena, sizeof *a * (size_t)(n->n_args ? n->n_args : 1));
    if (!a)
        return hs_err_nomem(c->err, 0);
    for (int i = 0; i < n->n_args; i++)
        HS_TRY(ex_ev(c, n->args[i], sel, ns, &a[i]));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        hs_error e = {0};
        pv_val r;
        double *d;
        float *f;
        uint8_t *nul;
        if (pv_arr_new(c->arena, n->n_args, &r, &d, &f, &nul, &e) != HS_OK)
            return pv_fail(c, n, &e);
        int32_t flags = 0;
        for (int i = 0; i < n->n_args; i++) {
            const ex_ty *at = &n->args[i]->type;
            if (a[i].nul[j] || at->t == EX_T_NULL) {
                nul[i] = 1;
                flags |= PV_ARR_HAS_NULL;
                continue;
            }
            if (at->t == EX_T_INT && el == PV_E_NUMERIC) {   /* an integer of numeric's scale 0 */
                char t[32];
                int len = hs_snprintf_c(t, sizeof t, "%lld", (long long)a[i].v.i[j]);
                if (pv_arr_set_text(PV_E_NUMERIC, r, i, t, (size_t)len, &e) != HS_OK)
                    return pv_fail(c, n, &e);
            } else if (at->t == EX_T_INT && (el == PV_E_INT4 || el == PV_E_INT8)) {
                pv_arr_set_int(el, r, i, a[i].v.i[j]);
            } else if (at->t == EX_T_INT) {
                d[i] = (double)a[i].v.i[j];
                f[i] = (float)d[i];
            } else if (at->t == EX_T_FLOAT && el == PV_E_NUMERIC) {   /* float8_numeric: 15 digits */
                char t[64];
                double v = a[i].v.f[j];
                int len = isfinite(v) ? hs_snprintf_c(t, sizeof t, "%.*g", at->bits == 32 ? 6 : 15, v)
                                      : hs_snprintf_c(t, sizeof t, isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
                if (pv_arr_set_text(PV_E_NUMERIC, r, i, t, (size_t)len, &e) != HS_OK)
                    return pv_fail(c, n, &e);
            } else if (at->t == EX_T_FLOAT) {
                d[i] = a[i].v.f[j];
                f[i] = (float)d[i];
            } else if (at->t == EX_T_STR) {   /* a literal of a numeric[] (expr_numarr.c) */
                const ex_str *s = &a[i].v.s[j];
                if (pv_arr_set_text(el, r, i, (const char *)s->p, s->n, &e) != HS_OK)
                    return pv_fail(c, n, &e);
            } else { /* DEC: numeric, float4 through its text */
                char t[64];
                int len = ex_dec_format(a[i].v.d[j], at->scale, t);
                if (pv_arr_set_text(PV_E_NUMERIC, r, i, t, (size_t)len, &e) != HS_OK)
                    return pv_fail(c, n, &e);
            }
        }
        memcpy((uint8_t *)r.p + 4, &flags, 4);
        out->nul[j] = 0;
        out->v.s[j].p = r.p;
        out->v.s[j].n = r.n;
    }
    return HS_OK;
}

/* EX_ARITH and the pgvector EX_FUNCs: arguments evaluated on all rows of
 * sel; a null argument gives a null result (the functions are STRICT). */
hs_status ex_pv_ev(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a[3];
    int na = n->n_args < 3 ? n->n_args : 3;
    for (int i = 0; i < na; i++)
        HS_TRY(ex_ev(c, n->args[i], sel, ns, &a[i]));
    HS_TRY(ex_vec_new(c, n->type.t, out));
    if (n->kind == EX_FUNC && n->op == EX_FN_PV_ARRAY)
        return pv_ev_array(c, n, sel, ns, out);
    pv_type t = (pv_type)ex_pv_type(n->args[0]->type.t);
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        bool nul = false;
        for (int i = 0; i < na; i++)
            nul |= a[i].nul[j] != 0;
        out->nul[j] = nul;
        if (nul)
            continue;
        hs_error e = {0};
        pv_val x = {a[0].v.s[j].p, a[0].v.s[j].n}, y = {NULL, 0}, r = {NULL, 0};
        if (na > 1 && ex_is_pv(n->args[1]->type.t)) {
            y.p = a[1].v.s[j].p;
            y.n = a[1].v.s[j].n;
        }
        hs_status st = HS_OK;
        if (n->kind == EX_ARITH) {
            st = pv_arith(t, n->op, x, y, c->arena, &r, &e);
        } else {
            switch ((ex_fn)n->op) {
            case EX_FN_PV_DIST: st = pv_distance(t, (pv_dist)n->aux, x, y, &out->v.f[j], &e); break;
            case EX_FN_PV_DIMS: out->v.i[j] = pv_dims(t, x); break;
            case EX_FN_PV_NORM: out->v.f[j] = pv_norm(t, x); break;
            case EX_FN_PV_NORMALIZE: st = pv_l2_normalize(t, x, c->arena, &r, &e); break;
            case EX_FN_PV_QUANTIZE: st = pv_binary_quantize(t, x, c->arena, &r, &e); break;
            case EX_FN_PV_SUBVECTOR:
                st = pv_subvector(t, x, a[1].v.i[j], a[2].v.i[j], c->arena, &r, &e);
                break;
            default: return hs_err_set(c->err, HS_INTERNAL, "expression: unknown pgvector function");
            }
        }
        if (st != HS_OK)
            return pv_fail(c, n, &e);
        if (ex_is_pvx(n->type.t)) {
            out->v.s[j].p = r.p;
            out->v.s[j].n = r.n;
        }
    }
    return HS_OK;
}

hs_status ex_pv_append(const ex_ty *t, hs_column *col, const ex_str *v)
{
    int pt = ex_pv_type(t->t);
    pv_val pv = {v->p, v->n};
    switch (pt) {
    case PV_VECTOR: case PV_HALFVEC: {
        size_t es = pt == PV_VECTOR ? 4 : 2;
        if (v->n)
            HS_TRY(hs_col_append_fixed_n(col->children[0], v->p, (int64_t)(v->n / es)));
        return hs_col_list_end(col);
    }
    case PV_SPARSEVEC: {
        int32_t h[2];
        memcpy(h, v->p, 8);
        HS_TRY(hs_col_append_fixed(col->children[0], &h[0]));
        if (h[1])
            HS_TRY(hs_col_append_fixed_n(col->children[1]->children[0], v->p + 8, h[1]));
        HS_TRY(hs_col_list_end(col->children[1]));
        if (h[1])
            HS_TRY(hs_col_append_fixed_n(col->children[2]->children[0], v->p + 8 + 4 * (size_t)h[1], h[1]));
        HS_TRY(hs_col_list_end(col->children[2]));
        return hs_col_struct_append_valid(col);
    }
    case 0: { /* EX_T_ARRAY */
        if (t->t != EX_T_ARRAY)
            return HS_INVALID;
        if (t->elem == PV_E_TEXT) {   /* text[] -> list<string> */
            hs_column *ch = col->children[0];
            for (int64_t i = 0, m = ta_len(pv); i < m; i++) {
                const uint8_t *ep;
                size_t en;
                if (!ta_get(pv, i, &ep, &en))
                    HS_TRY(hs_col_append_null(ch));
                else
                    HS_TRY(hs_col_append_bytes(ch, en ? ep : (const uint8_t *)"", en));
            }
            return hs_col_list_end(col);
        }
        int32_t h[2];
        memcpy(h, v->p, 8);
        const double *d = (const double *)(v->p + 8);
        const float *f = (const float *)(v->p + 8 + 8 * (size_t)h[0]);
        const uint8_t *nul = v->p + 8 + 12 * (size_t)h[0];
        hs_column *ch = col->children[0];
        for (int32_t i = 0; i < h[0]; i++) {
            if (nul[i]) {
                HS_TRY(hs_col_append_null(ch));
            } else if (t->elem == PV_E_INT4 || t->elem == PV_E_INT8) {
                __int128 ex;
                int sc;
                int64_t x = pv_arr_get_exact(pv, i, &ex, &sc) ? (int64_t)ex : (int64_t)d[i];
                int32_t x4 = (int32_t)x;
                HS_TRY(t->elem == PV_E_INT4 ? hs_col_append_fixed(ch, &x4) : hs_col_append_fixed(ch, &x));
            } else if (t->elem == PV_E_FLOAT4) {
                HS_TRY(hs_col_append_fixed(ch, &f[i]));
            } else {
                HS_TRY(hs_col_append_fixed(ch, &d[i]));
            }
        }
        return hs_col_list_end(col);
    }
    case PV_BIT: {
        hs_buf b = {0};
        hs_status st = pv_out(PV_BIT, pv, &b);
        if (st == HS_OK)
            st = hs_col_append_bytes(col, b.data ? b.data : (const uint8_t *)"", b.len);
        hs_buf_free(&b);
        return st;
    }
    }
    return HS_INVALID;
}
