/*
 * expr/expr_bindpv.c - binding of the pgvector types, literals, operators
 * and functions (vector, halfvec, sparsevec, bit).
 *
 * Owns: the type names and typmods (vector(n) ...), bit-string constants,
 * ARRAY[...] constructors of the pgvector element types, the resolution of
 * pgvector's operators (<-> <=> <#> <+> <~> <%> + - * || and comparisons)
 * and functions against PostgreSQL 15 + pgvector 0.8.1's signatures.
 * expr_bind.c calls in here (exb_pv_*); the kernels are expr_pgvector.c's
 * and pgvector.c's.
 */
#include "expr/expr_int.h"

#include "base/mem.h"
#include "expr/pgvector.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Operators and functions resolve as PostgreSQL resolves pgvector's
 * signatures: every signature is (T, T) or (T) for T among the types the
 * operator is defined for; an argument fits T when it is T, an untyped
 * literal or NULL, or has an implicit cast to T (vector -> halfvec,
 * vector -> sparsevec, halfvec -> sparsevec).  The candidate with the most
 * exact argument types wins; a tie is "is not unique" (42725), no candidate
 * "does not exist" (42883).  So vector <-> halfvec computes in halfvec, and
 * l2_norm(vector) is ambiguous, as in PostgreSQL.
 */

/* PostgreSQL's names of our types, for the messages */
static const char *pg_tname(const ex_ty *t)
{
    switch (t->t) {
    case EX_T_NULL: case EX_T_UNKNOWN: return "unknown";
    case EX_T_BOOL: return "boolean";
    case EX_T_INT: return t->bits == 16 || t->bits == 8 ? "smallint" : t->bits == 32 ? "integer" : "bigint";
    case EX_T_FLOAT: return t->bits == 32 ? "real" : "double precision";
    case EX_T_DEC: return "numeric";
    case EX_T_STR: return "text";
    case EX_T_BIN: return t->uuid ? "uuid" : "bytea";
    case EX_T_DATE: return "date";
    case EX_T_TS: return t->tz ? "timestamp with time zone" : "timestamp without time zone";
    case EX_T_TIME: return "time without time zone";
    case EX_T_VEC: return "vector";
    case EX_T_HALFVEC: return "halfvec";
    case EX_T_SPARSEVEC: return "sparsevec";
    case EX_T_BIT: return "bit";
    case EX_T_ARRAY:
        return t->elem == PV_E_INT4 ? "integer[]" : t->elem == PV_E_FLOAT4 ? "real[]"
             : t->elem == PV_E_INT8 ? "bigint[]" : t->elem == PV_E_TEXT ? "text[]"
             : t->elem == PV_E_FLOAT8 ? "double precision[]" : "numeric[]";
    default: return "record";
    }
}

bool exb_pv_typename(const char *nm)
{
    return !strcasecmp(nm, "vector") || !strcasecmp(nm, "halfvec") || !strcasecmp(nm, "sparsevec") ||
           !strcasecmp(nm, "bit") || !strcasecmp(nm, "varbit");
}

hs_status exb_pv_typmod(ex_binder *b, const char *nm, size_t n_mods, const int64_t *mv, int loc,
                                ex_ty *out)
{
    ex_ty t = exb_ty(EX_T_NULL);
    t.t = !strcasecmp(nm, "vector") ? EX_T_VEC : !strcasecmp(nm, "halfvec") ? EX_T_HALFVEC
        : !strcasecmp(nm, "sparsevec") ? EX_T_SPARSEVEC : EX_T_BIT;
    bool varbit = !strcasecmp(nm, "varbit");
    if (n_mods > 1)
        return exb_err(b, HS_INVALID, loc, "invalid type modifier");
    if (n_mods == 1) {
        hs_error e = {0};
        if (pv_typmod_in((pv_type)ex_pv_type(t.t), mv[0], &e) != HS_OK)
            return exb_err(b, HS_INVALID, loc, "%s", e.msg);
        t.dim = varbit ? 0 : (int32_t)mv[0];
    } else if (t.t == EX_T_BIT && !varbit) {
        t.dim = 1; /* "bit" is bit(1) */
    }
    *out = t;
    return HS_OK;
}

hs_status exb_pv_bitconst(ex_binder *b, json_t *v, int loc, ex_node **out)
{
    const char *s = exb_jstr(v, "bsval");
    if (!s)
        return exb_err(b, HS_INTERNAL, loc, "malformed bit-string constant");
    hs_error e = {0};
    pv_val pv;
    if (pv_in(PV_BIT, s, strlen(s), -1, &b->e->arena, &pv, &e) != HS_OK)
        return e.code == HS_NOMEM ? exb_nomem(b) : exb_err(b, HS_INVALID, loc, "%s", e.msg);
    ex_node *n = exb_mk_const(b, exb_ty(EX_T_BIT), loc);
    if (!n)
        return exb_nomem(b);
    n->val.s.p = pv.p;
    n->val.s.n = pv.n;
    *out = n;
    return HS_OK;
}

/* int4[], real[], double precision[], numeric[] (other element types: unsupported) */
hs_status exb_pv_arraytype(ex_binder *b, json_t *tn, int loc, ex_ty *out)
{
    bool other;
    const char *nm = exb_last_name(json_object_get(tn, "names"), &other);
    if (!nm || other)
        return exb_err(b, HS_UNSUPPORTED, loc, "unsupported type name");
    ex_ty t = exb_ty(EX_T_ARRAY);
    if (!strcasecmp(nm, "int4") || !strcasecmp(nm, "int") || !strcasecmp(nm, "integer"))
        t.elem = PV_E_INT4;
    else if (!strcasecmp(nm, "int8") || !strcasecmp(nm, "bigint"))
        t.elem = PV_E_INT8;
    else if (!strcasecmp(nm, "float4") || !strcasecmp(nm, "real"))
        t.elem = PV_E_FLOAT4;
    else if (!strcasecmp(nm, "float8") || !strcasecmp(nm, "double"))
        t.elem = PV_E_FLOAT8;
    else if (!strcasecmp(nm, "numeric") || !strcasecmp(nm, "decimal"))
        t.elem = PV_E_NUMERIC;
    else if (!strcasecmp(nm, "text") || !strcasecmp(nm, "varchar") || !strcasecmp(nm, "bpchar"))
        t.elem = PV_E_TEXT;
    else
        return exb_err(b, HS_UNSUPPORTED, loc, "arrays of %s are not supported", nm);
    *out = t;
    return HS_OK;
}

/* ARRAY[...] of numbers: integer[] when every element is an integer of at
 * most 32 bits, double precision[] when one is a float, else numeric[];
 * ARRAY[] and ARRAY[NULL, ...] take their type from the cast around them
 * (42P18 without one, as in PostgreSQL). */
hs_status exb_pv_array(ex_binder *b, json_t *body, const ex_ty *cast, ex_node **out)
{
    int loc = exb_loc(body);
    ex_node **a;
    int n;
    HS_TRY(exb_list(b, json_object_get(body, "elements"), &a, &n));
    /* text[]: a text element, or only unknown literals and NULLs (without
     * a cast to a numeric array) */
    bool any_text = false, any_num = false;
    for (int i = 0; i < n; i++) {
        any_text |= a[i]->type.t == EX_T_STR || ex_is_ta(&a[i]->type) || a[i]->type.t == EX_T_OTHER;
        any_num |= a[i]->type.t != EX_T_STR && a[i]->type.t != EX_T_UNKNOWN && a[i]->type.t != EX_T_NULL;
    }
    if ((cast && ex_is_ta(cast) && !any_num) || any_text || (!any_num && n > 0 && !cast))
        return exb_ta_array(b, a, n, loc, out);
    bool any_float = false, any_dec = false, all_f32 = true, any = false, any_i64 = false;
    for (int i = 0; i < n; i++) {
        ex_ty *t = &a[i]->type;
        if (t->t == EX_T_UNKNOWN || t->t == EX_T_NULL)
            continue;
        any = true;
        if (t->t == EX_T_FLOAT) {
            any_float = true;
            all_f32 &= t->bits == 32;
        } else if (t->t == EX_T_DEC) {
            any_dec = true;
            all_f32 = false;
        } else if (t->t == EX_T_INT) {
            all_f32 = false;
            any_i64 |= t->bits > 32;
        } else {
            return exb_err(b, HS_UNSUPPORTED, a[i]->loc >= 0 ? a[i]->loc : loc,
                          "ARRAY of %s is not supported (arrays of numbers only)", pg_tname(t));
        }
    }
    ex_ty at = exb_ty(EX_T_ARRAY);
    if (!any && cast) {
        at = *cast;
    } else if (!any) {
        if (n == 0) {
            return exb_err(b, HS_INVALID, loc, "cannot determine type of empty array");
        }
        return exb_err(b, HS_UNSUPPORTED, loc, "ARRAY of text or NULL is not supported");
    } else if (cast && cast->t == EX_T_ARRAY && !ex_is_ta(cast)) {
        at = *cast;   /* ARRAY[...]::t[]: each element coerced to t, as PostgreSQL does */
    } else {
        at.elem = any_float ? (all_f32 ? PV_E_FLOAT4 : PV_E_FLOAT8) : any_dec ? PV_E_NUMERIC
                : any_i64 ? PV_E_INT8 : PV_E_INT4;
    }
    ex_ty et = at.elem == PV_E_INT4 || at.elem == PV_E_INT8 ? exb_ty(EX_T_INT) : at.elem == PV_E_NUMERIC ? exb_ty(EX_T_NULL) : exb_ty(EX_T_FLOAT);
    if (at.elem == PV_E_INT4)
        et.bits = 32;
    for (int i = 0; i < n; i++) {
        ex_t t = a[i]->type.t;
        if (t == EX_T_UNKNOWN) {   /* a literal: read by the element's input in the kernel */
            HS_TRY(exb_cast_to(b, &a[i], exb_ty(EX_T_STR), true));
            continue;
        }
        if (at.elem == PV_E_NUMERIC || t == EX_T_NULL)
            continue; /* INT, DEC and FLOAT elements convert in the kernel */
        if (t != et.t || (t == EX_T_INT && a[i]->type.bits > et.bits))
            HS_TRY(exb_cast_to(b, &a[i], et, false));
    }
    ex_node *x = exb_mk(b, EX_FUNC, at, loc, 0);
    if (!x)
        return exb_nomem(b);
    x->op = EX_FN_PV_ARRAY;
    x->args = a;
    x->n_args = n;
    *out = x;
    return exb_fold(b, out, false);
}

static bool pv_implicit(ex_t from, ex_t to)
{
    return from == to || from == EX_T_NULL || from == EX_T_UNKNOWN ||
           (from == EX_T_VEC && (to == EX_T_HALFVEC || to == EX_T_SPARSEVEC)) ||
           (from == EX_T_HALFVEC && to == EX_T_SPARSEVEC);
}

/* Picks T among cands for the argument types a[0..n); 0 = ok, 1 = none,
 * 2 = not unique. */
static int pv_resolve(const ex_t *cands, int nc, ex_node *const *a, int n, ex_t *out)
{
    int best = -1, n_best = 0;
    for (int i = 0; i < nc; i++) {
        int exact = 0;
        bool ok = true;
        for (int k = 0; k < n; k++) {
            ok &= pv_implicit(a[k]->type.t, cands[i]);
            exact += a[k]->type.t == cands[i];
        }
        if (!ok)
            continue;
        if (exact > best) {
            best = exact;
            n_best = 1;
            *out = cands[i];
        } else if (exact == best) {
            n_best++;
        }
    }
    return n_best == 0 ? 1 : n_best > 1 ? 2 : 0;
}

bool exb_pv_opname(const char *op)
{
    return !strcmp(op, "<->") || !strcmp(op, "<#>") || !strcmp(op, "<=>") || !strcmp(op, "<+>") ||
           !strcmp(op, "<~>") || !strcmp(op, "<%>");
}

static const ex_t PV_DENSE3[] = {EX_T_VEC, EX_T_HALFVEC, EX_T_SPARSEVEC};
static const ex_t PV_DENSE2[] = {EX_T_VEC, EX_T_HALFVEC};
static const ex_t PV_CONCAT[] = {EX_T_VEC, EX_T_HALFVEC, EX_T_BIT};
static const ex_t PV_ALL[] = {EX_T_VEC, EX_T_HALFVEC, EX_T_SPARSEVEC, EX_T_BIT};
static const ex_t PV_BITS[] = {EX_T_BIT};

hs_status exb_pv_op(ex_binder *b, const char *opname, ex_node *l, ex_node *r, int loc,
                            ex_node **out)
{
    static const struct { const char *op; const ex_t *c; int nc; int dist; } ops[] = {
        {"<->", PV_DENSE3, 3, PV_L2}, {"<#>", PV_DENSE3, 3, PV_NEG_IP},
        {"<=>", PV_DENSE3, 3, PV_COSINE}, {"<+>", PV_DENSE3, 3, PV_L1},
        {"<~>", PV_BITS, 1, PV_HAMMING}, {"<%>", PV_BITS, 1, PV_JACCARD},
        {"+", PV_DENSE2, 2, -1}, {"-", PV_DENSE2, 2, -1}, {"*", PV_DENSE2, 2, -1},
        {"||", PV_CONCAT, 3, -1},
        {"=", PV_ALL, 4, -1}, {"<>", PV_ALL, 4, -1}, {"!=", PV_ALL, 4, -1}, {"<", PV_ALL, 4, -1},
        {"<=", PV_ALL, 4, -1}, {">", PV_ALL, 4, -1}, {">=", PV_ALL, 4, -1},
    };
    int which = -1;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && which < 0; i++)
        if (!strcmp(opname, ops[i].op))
            which = (int)i;
    ex_node *a[2] = {l, r};
    ex_t t = EX_T_NULL;
    int rc = which < 0 ? 1 : pv_resolve(ops[which].c, ops[which].nc, a, 2, &t);
    if (rc == 1 && !strcmp(opname, "||")) {
        /* anynonarray || text: PostgreSQL's text concatenation of the value's text */
        ex_t lt = l->type.t, rt = r->type.t;
        bool ltext = lt == EX_T_STR || lt == EX_T_UNKNOWN || lt == EX_T_NULL;
        bool rtext = rt == EX_T_STR || rt == EX_T_UNKNOWN || rt == EX_T_NULL;
        if ((ex_is_pv(lt) && rtext) || (ex_is_pv(rt) && ltext)) {
            HS_TRY(exb_cast_to(b, &l, exb_ty(EX_T_STR), false));
            HS_TRY(exb_cast_to(b, &r, exb_ty(EX_T_STR), false));
            return exb_arith(b, '|', l, r, loc, out);
        }
    }
    if (rc == 1)
        return exb_err(b, HS_INVALID, loc, "operator does not exist: %s %s %s", pg_tname(&l->type), opname,
                      pg_tname(&r->type));
    if (rc == 2)
        return exb_err(b, HS_INVALID, loc, "operator is not unique: %s %s %s", pg_tname(&l->type), opname,
                      pg_tname(&r->type));
    HS_TRY(exb_cast_to(b, &l, exb_ty(t), l->type.t == EX_T_UNKNOWN));
    HS_TRY(exb_cast_to(b, &r, exb_ty(t), r->type.t == EX_T_UNKNOWN));
    int cmp = exb_parse_cmp_op(opname);
    ex_node *n;
    if (cmp >= 0) {
        n = exb_mk(b, EX_CMP, exb_ty(EX_T_BOOL), loc, 2);
        if (n) {
            n->op = cmp;
            n->cmode = EX_CM_PV;
        }
    } else if (ops[which].dist >= 0) {
        n = exb_mk(b, EX_FUNC, exb_ty(EX_T_FLOAT), loc, 2);
        if (n) {
            n->op = EX_FN_PV_DIST;
            n->aux = ops[which].dist;
        }
    } else {
        n = exb_mk(b, EX_ARITH, exb_ty(t), loc, 2);
        if (n)
            n->op = !strcmp(opname, "||") ? '|' : opname[0];
    }
    if (!n)
        return exb_nomem(b);
    n->args[0] = l;
    n->args[1] = r;
    *out = n;
    return exb_fold(b, out, false);
}

static const struct pv_fn {
    const char *name;
    ex_fn fn;
    int dist;          /* EX_FN_PV_DIST: pv_dist */
    const ex_t *c;     /* candidate types of the vector arguments */
    int nc;
    int n_vec;         /* vector arguments (first), then n_int integers */
    int n_int;
} PV_FNS[] = {
    {"l2_distance", EX_FN_PV_DIST, PV_L2, PV_DENSE3, 3, 2, 0},
    {"cosine_distance", EX_FN_PV_DIST, PV_COSINE, PV_DENSE3, 3, 2, 0},
    {"inner_product", EX_FN_PV_DIST, PV_IP, PV_DENSE3, 3, 2, 0},
    {"l1_distance", EX_FN_PV_DIST, PV_L1, PV_DENSE3, 3, 2, 0},
    {"vector_l2_squared_distance", EX_FN_PV_DIST, PV_L2_SQUARED, PV_DENSE3, 1, 2, 0},
    {"vector_negative_inner_product", EX_FN_PV_DIST, PV_NEG_IP, PV_DENSE3, 1, 2, 0},
    {"hamming_distance", EX_FN_PV_DIST, PV_HAMMING, PV_BITS, 1, 2, 0},
    {"jaccard_distance", EX_FN_PV_DIST, PV_JACCARD, PV_BITS, 1, 2, 0},
    {"vector_dims", EX_FN_PV_DIMS, 0, PV_DENSE2, 2, 1, 0},
    {"vector_norm", EX_FN_PV_NORM, 0, PV_DENSE3, 1, 1, 0},
    {"l2_norm", EX_FN_PV_NORM, 0, PV_DENSE3 + 1, 2, 1, 0},
    {"l2_normalize", EX_FN_PV_NORMALIZE, 0, PV_DENSE3, 3, 1, 0},
    {"binary_quantize", EX_FN_PV_QUANTIZE, 0, PV_DENSE2, 2, 1, 0},
    {"subvector", EX_FN_PV_SUBVECTOR, 0, PV_DENSE2, 2, 1, 2},
};

static const struct pv_fn *pv_fn_find(const char *fn)
{
    for (size_t i = 0; i < sizeof PV_FNS / sizeof PV_FNS[0]; i++)
        if (!strcasecmp(fn, PV_FNS[i].name))
            return &PV_FNS[i];
    return NULL;
}

bool exb_pv_funcname(const char *fn) { return pv_fn_find(fn) != NULL; }

hs_status exb_pv_func(ex_binder *b, const char *fn, json_t *args, int loc, ex_node **out)
{
    const struct pv_fn *f = pv_fn_find(fn);
    ex_node **a;
    int n;
    HS_TRY(exb_list(b, args, &a, &n));
    char sig[200];
    size_t k = 0;
    k += (size_t)snprintf(sig + k, sizeof sig - k, "%s(", f->name);
    for (int i = 0; i < n && k < sizeof sig; i++)
        k += (size_t)snprintf(sig + k, sizeof sig - k, "%s%s", i ? ", " : "", pg_tname(&a[i]->type));
    if (k < sizeof sig)
        snprintf(sig + k, sizeof sig - k, ")");
    if (n != f->n_vec + f->n_int)
        return exb_err(b, HS_INVALID, loc, "function %s does not exist", sig);
    for (int i = f->n_vec; i < n; i++) {
        ex_t it = a[i]->type.t;
        if (it != EX_T_INT && it != EX_T_UNKNOWN && it != EX_T_NULL)
            return exb_err(b, HS_INVALID, loc, "function %s does not exist", sig);
        if (it != EX_T_INT || a[i]->type.bits > 32) {
            if (it == EX_T_INT)
                return exb_err(b, HS_INVALID, loc, "function %s does not exist", sig);
            ex_ty i32 = exb_ty(EX_T_INT);
            i32.bits = 32;
            HS_TRY(exb_cast_to(b, &a[i], i32, true));
        }
    }
    ex_t t = EX_T_NULL;
    int rc = pv_resolve(f->c, f->nc, a, f->n_vec, &t);
    if (rc == 1)
        return exb_err(b, HS_INVALID, loc, "function %s does not exist", sig);
    if (rc == 2)
        return exb_err(b, HS_INVALID, loc, "function %s is not unique", sig);
    for (int i = 0; i < f->n_vec; i++)
        HS_TRY(exb_cast_to(b, &a[i], exb_ty(t), a[i]->type.t == EX_T_UNKNOWN));
    ex_ty rt = exb_ty(t);
    switch (f->fn) {
    case EX_FN_PV_DIST: case EX_FN_PV_NORM: rt = exb_ty(EX_T_FLOAT); break;
    case EX_FN_PV_DIMS: rt = exb_ty(EX_T_INT); rt.bits = 32; break;
    case EX_FN_PV_QUANTIZE: rt = exb_ty(EX_T_BIT); break;
    default: break;
    }
    ex_node *x = exb_mk(b, EX_FUNC, rt, loc, 0);
    if (!x)
        return exb_nomem(b);
    x->op = (int)f->fn;
    x->aux = f->dist;
    x->args = a;
    x->n_args = n;
    *out = x;
    return exb_fold(b, out, false);
}