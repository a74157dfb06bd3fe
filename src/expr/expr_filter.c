/*
 * expr/expr_filter.c - what the planner and the indexes see of an
 * expression: ex_to_pred (the implied simple filter), plus ex_ty,
 * ex_is_true, ex_field_ids and ex_format.
 *
 * ex_to_pred walks the bound tree with a negation flag (NOT is pushed
 * to the leaves: exact under Kleene logic, since NOT swaps TRUE and FALSE
 * and keeps NULL) and turns each predicate into pr_filter leaves whose TRUE
 * rows include every row where the predicate is TRUE.  What has no such form
 * becomes PR_E_TRUE and clears *exact.  AND drops TRUE children, OR drops
 * FALSE children, so an index sees the useful leaves.
 *
 * Leaves compare the column in its own kind (pr_kind_of), exactly as
 * pr_filter_bind makes them, so a constant of another type is converted
 * here, exactly:
 *
 *   column          constant           leaf
 *   --------------  -----------------  -------------------------------------------
 *   integer         decimal / double   col * 10^s op d  ->  col op' floor/ceil(d/10^s)
 *   date            timestamp          col * day op t   ->  same, with day in t's unit
 *   timestamp(u)    timestamp(finer)   col * m op t     ->  same
 *   decimal(s)      decimal(s' > s)    col * 10^(s'-s) op d -> same in int128
 *   double          non-NaN x          col op x; > and >= also OR col IN (NaN), since
 *                                      NaN sorts above every number here but not in
 *                                      pr_filter's comparisons
 *   double          NaN                =, >= -> col = NaN; <> , < -> col <> NaN;
 *                                      <= -> col IS NOT NULL; > -> FALSE
 *   decimal         double             TRUE (inexact): binary rounding of the column
 *
 * A bound out of the column's range turns the leaf into IS NOT NULL or FALSE.
 * LIKE 'abc%' becomes col >= 'abc' AND col < 'abd' (exact); LIKE without
 * wildcards is equality; other patterns keep only their literal prefix.
 */
#include "expr/expr_fastparse.h"
#include "expr/expr_int.h"
#include "expr/pgvector.h"

#include "base/mem.h"
#include "base/numfmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* small accessors                                                     */

const hs_field *ex_type(const ex_expr *e) { return &e->type_field; }

bool ex_is_true(const ex_expr *e)
{
    const ex_node *r = e->root;
    return r->kind == EX_CONST && r->type.t == EX_T_BOOL && !r->val.null && r->val.i;
}

static hs_status ids_rec(const ex_node *n, hs_buf *ids, int depth)
{
    if (depth > 4 * EX_MAX_DEPTH)
        return HS_INVALID;
    if (n->kind == EX_COL) {
        for (size_t i = 0; i < HS_VEC_LEN(ids, int32_t); i++)
            if (HS_VEC_AT(ids, int32_t, i) == n->field_id)
                return HS_OK;
        return HS_VEC_PUSH(ids, int32_t, n->field_id);
    }
    for (int i = 0; i < n->n_args; i++)
        HS_TRY(ids_rec(n->args[i], ids, depth + 1));
    return HS_OK;
}

hs_status ex_field_ids(const ex_expr *e, hs_buf *ids)
{
    return e ? ids_rec(e->root, ids, 0) : HS_OK;
}

int32_t ex_column_id(const ex_expr *e)
{
    const ex_node *n = e ? e->root : NULL;
    if (!n || n->kind != EX_COL || n->sub > 0 || n->field_id <= 0 || !n->field ||
        n->field->type != e->type_field.type || n->field->n_children != 0)
        return -1;
    return n->field_id;
}

/* ------------------------------------------------------------------ */
/* terms judged by value (the scan's dictionary filter)               */

/* True when n is a function of one top-level string/binary column (*id,
 * set by the first column met) that cannot fail: constants, the column,
 * string comparisons of them, IN of constants, LIKE/ILIKE of a constant
 * pattern, IS [NOT] NULL, IS [NOT] TRUE/FALSE/UNKNOWN, NOT/AND/OR. */
static bool value_term(const ex_node *n, int32_t *id, int depth)
{
    if (depth > 64)
        return false;
    switch (n->kind) {
    case EX_CONST:
        return true;
    case EX_COL:
        if (n->sub > 0 || n->field_id <= 0 || !n->field ||
            (n->field->type != HS_TYPE_STRING && n->field->type != HS_TYPE_BINARY) ||
            (n->type.t != EX_T_STR && n->type.t != EX_T_BIN) || (*id > 0 && *id != n->field_id))
            return false;
        *id = n->field_id;
        return true;
    case EX_CMP: case EX_DISTINCT: case EX_BETWEEN:
        if (n->cmode != EX_CM_BYTES)
            return false;
        for (int i = 0; i < n->n_args; i++)
            if ((n->args[i]->kind != EX_COL && n->args[i]->kind != EX_CONST) ||
                !value_term(n->args[i], id, depth + 1))
                return false;
        return true;
    case EX_IN:
        return n->set && n->cmode == EX_CM_BYTES && n->args[0]->kind == EX_COL &&
               value_term(n->args[0], id, depth + 1);
    case EX_LIKE:
        return n->pat && n->args[0]->kind == EX_COL && value_term(n->args[0], id, depth + 1);
    case EX_IS_NULL:
        return n->args[0]->kind == EX_COL && value_term(n->args[0], id, depth + 1);
    case EX_NOT: case EX_AND: case EX_OR: case EX_BOOLTEST:
        for (int i = 0; i < n->n_args; i++)
            if (n->args[i]->type.t != EX_T_BOOL || !value_term(n->args[i], id, depth + 1))
                return false;
        return true;
    default:
        return false;
    }
}

int ex_and_terms(const ex_expr *e)
{
    return e->root->kind == EX_AND ? e->root->n_args : 1;
}

static const ex_node *term_at(const ex_expr *e, int t)
{
    return e->root->kind == EX_AND ? e->root->args[t] : e->root;
}

int32_t ex_term_value_col(const ex_expr *e, int t)
{
    int32_t id = 0;
    const ex_node *n = term_at(e, t);
    return n->type.t == EX_T_BOOL && value_term(n, &id, 0) && id > 0 ? id : -1;
}

hs_status ex_term_field_ids(const ex_expr *e, int t, hs_buf *ids)
{
    return ids_rec(term_at(e, t), ids, 0);
}

hs_status ex_terms_expr(const ex_expr *e, const bool *keep, const hs_field *const *cols,
                        int n_cols, ex_expr **out, hs_error *err)
{
    *out = NULL;
    ex_expr *x = hs_calloc(1, sizeof *x);
    if (!x)
        return hs_err_nomem(err, sizeof *x);
    int nt = ex_and_terms(e), na = 0;
    ex_node **args = hs_arena_calloc(&x->arena, (size_t)(nt + n_cols + 1), sizeof *args);
    hs_status st = args ? HS_OK : HS_NOMEM;
    for (int t = 0; t < nt && st == HS_OK; t++)
        if (keep[t])
            args[na++] = (ex_node *)term_at(e, t);
    for (int j = 0; j < n_cols && st == HS_OK; j++) {
        ex_node *c = hs_arena_calloc(&x->arena, 1, sizeof *c);
        if (!c) {
            st = HS_NOMEM;
            break;
        }
        c->kind = EX_COL;
        c->type.t = EX_T_BOOL;
        c->loc = -1;
        c->esc = -1;
        c->field = cols[j];
        c->field_id = cols[j]->field_id;
        c->name = cols[j]->name;
        c->slot = e->n_slots + j;
        args[na++] = c;
    }
    ex_node *root = NULL;
    if (st == HS_OK && na == 1) {
        root = args[0];
    } else if (st == HS_OK) {
        root = hs_arena_calloc(&x->arena, 1, sizeof *root);
        if (root) {
            root->loc = -1;
            root->esc = -1;
            root->type.t = EX_T_BOOL;
            if (na == 0) {
                root->kind = EX_CONST;
                root->val.i = 1;
            } else {
                root->kind = EX_AND;
                root->n_args = na;
                root->args = args;
            }
        }
    }
    if (st != HS_OK || !root || hs_field_copy(&e->type_field, &x->type_field) != HS_OK) {
        hs_arena_destroy(&x->arena);
        hs_free(x);
        return hs_err_nomem(err, 64);
    }
    x->root = root;
    x->text = e->text;
    x->schema = e->schema;
    x->n_slots = e->n_slots + n_cols;
    *out = x;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* the implied pr_filter                                              */

typedef struct conv {
    pr_filter *f;
    hs_error *err;
} conv;

static pr_op negate_op(pr_op op)
{
    switch (op) {
    case PR_EQ: return PR_NE;
    case PR_NE: return PR_EQ;
    case PR_LT: return PR_GE;
    case PR_LE: return PR_GT;
    case PR_GT: return PR_LE;
    default: return PR_LT;
    }
}

static pr_op flip_op(pr_op op)
{
    switch (op) {
    case PR_LT: return PR_GT;
    case PR_LE: return PR_GE;
    case PR_GT: return PR_LT;
    case PR_GE: return PR_LE;
    default: return op;
    }
}

static pr_expr *new_tx(conv *c, pr_ekind k)
{
    pr_expr *x = hs_arena_calloc(&c->f->arena, 1, sizeof *x);
    if (x) {
        x->kind = k;
        x->field_id = -1;
    }
    return x;
}

static hs_status nomem(conv *c) { return hs_err_nomem(c->err, sizeof(pr_expr)); }

static hs_status konst(conv *c, bool v, pr_expr **out)
{
    *out = new_tx(c, v ? PR_E_TRUE : PR_E_FALSE);
    return *out ? HS_OK : nomem(c);
}

static hs_status join(conv *c, pr_ekind k, pr_expr *l, pr_expr *r, pr_expr **out)
{
    pr_ekind absorb = k == PR_E_AND ? PR_E_FALSE : PR_E_TRUE;
    pr_ekind unit = k == PR_E_AND ? PR_E_TRUE : PR_E_FALSE;
    if (l->kind == absorb || r->kind == unit) {
        *out = l;
        return HS_OK;
    }
    if (r->kind == absorb || l->kind == unit) {
        *out = r;
        return HS_OK;
    }
    pr_expr *x = new_tx(c, k);
    if (!x)
        return nomem(c);
    x->l = l;
    x->r = r;
    *out = x;
    return HS_OK;
}

/* The column under a predicate: a COL, possibly wrapped in the widening
 * casts the binder inserts for comparisons (int -> decimal, date ->
 * timestamp, timestamp unit changes).  *m gets the factor the cast
 * multiplies by (1 when none), or 0 when the cast is not such a scaling. */
static const ex_node *column_of(const ex_node *n, __int128 *m)
{
    *m = 1;
    /* pgvector values (and a bit column's '0'/'1' text) are not comparable
     * by the predicate form's value kinds: no leaves on them but IS NULL */
    if (ex_is_pvx(n->type.t) || (n->kind == EX_CAST && ex_is_pvx(n->args[0]->type.t)))
        return NULL;
    if (n->kind == EX_COL)
        return n->sub ? NULL : n; /* (s).f in SQL: no leaf on the struct's id */
    if (n->kind != EX_CAST || n->args[0]->kind != EX_COL || n->args[0]->sub)
        return NULL;
    const ex_node *col = n->args[0];
    const ex_ty *from = &col->type, *to = &n->type;
    if (from->t == EX_T_INT && to->t == EX_T_DEC) {
        __int128 p = 1;
        for (int i = 0; i < to->scale; i++)
            p *= 10;
        *m = p;
        return col;
    }
    if (from->t == EX_T_DATE && to->t == EX_T_TS) {
        *m = (__int128)86400 * ex_unit_per_sec(to->unit);
        return col;
    }
    if ((from->t == EX_T_TS && to->t == EX_T_TS) || (from->t == EX_T_TIME && to->t == EX_T_TIME)) {
        if (to->unit < from->unit)
            return NULL;
        *m = ex_unit_per_sec(to->unit) / ex_unit_per_sec(from->unit);
        return col;
    }
    return NULL;
}

static hs_status lit_for(conv *c, const hs_field *f, const pr_val *v, pr_lit *l)
{
    memset(l, 0, sizeof *l);
    char buf[64];
    int n = 0;
    switch (v->kind) {
    case PR_V_I64:
        l->kind = f->type == HS_TYPE_BOOL ? PR_L_BOOL : PR_L_INT;
        l->i = v->i;
        l->f = (double)v->i;
        n = snprintf(buf, sizeof buf, "%lld", (long long)v->i);
        break;
    case PR_V_F64:
        l->kind = PR_L_FLOAT;
        l->f = v->f;
        n = hs_snprintf_c(buf, sizeof buf, "%.17g", v->f);
        break;
    case PR_V_I128: {
        l->kind = PR_L_FLOAT;
        ex_ty t;
        memset(&t, 0, sizeof t);
        t.t = EX_T_DEC;
        t.scale = (int8_t)v->scale;
        ex_value ev;
        memset(&ev, 0, sizeof ev);
        ev.d = v->d;
        hs_buf tb = {0};
        if (ex_value_text(&t, &ev, &tb) != HS_OK) {
            hs_buf_free(&tb);
            return nomem(c);
        }
        n = (int)(tb.len < sizeof buf - 1 ? tb.len : sizeof buf - 1);
        memcpy(buf, tb.data, (size_t)n);
        hs_buf_free(&tb);
        l->f = (double)v->d;
        for (int k = 0; k < v->scale; k++)
            l->f /= 10;
        break;
    }
    case PR_V_BYTES:
        l->kind = PR_L_STR;
        l->s = (const char *)v->p;
        l->n = v->n;
        return HS_OK;
    default:
        break;
    }
    char *s = hs_arena_strndup(&c->f->arena, buf, (size_t)(n > 0 ? n : 0));
    if (!s)
        return nomem(c);
    l->s = s;
    l->n = (size_t)(n > 0 ? n : 0);
    return HS_OK;
}

/* A leaf on column node col with n values. */
static hs_status leaf(conv *c, const ex_node *col, pr_ekind k, pr_op op, const pr_val *vals,
                      int n, pr_expr **out)
{
    pr_expr *x = new_tx(c, k);
    if (!x)
        return nomem(c);
    x->op = op;
    x->column = col->name;
    x->field = col->field;
    x->field_id = col->field_id;
    x->n_lits = n;
    if (n > 0) {
        x->vals = hs_arena_calloc(&c->f->arena, (size_t)n, sizeof *x->vals);
        x->lits = hs_arena_calloc(&c->f->arena, (size_t)n, sizeof *x->lits);
        if (!x->vals || !x->lits)
            return nomem(c);
        for (int i = 0; i < n; i++) {
            x->vals[i] = vals[i];
            if (vals[i].kind == PR_V_BYTES) {
                uint8_t *p = hs_arena_alloc(&c->f->arena, vals[i].n ? vals[i].n : 1);
                if (!p)
                    return nomem(c);
                if (vals[i].n)
                    memcpy(p, vals[i].p, vals[i].n);
                x->vals[i].p = p;
            }
            HS_TRY(lit_for(c, col->field, &x->vals[i], &x->lits[i]));
        }
    }
    *out = x;
    return HS_OK;
}

static hs_status leaf1(conv *c, const ex_node *col, pr_op op, const pr_val *v, pr_expr **out)
{
    return leaf(c, col, PR_E_CMP, op, v, 1, out);
}

static hs_status not_null(conv *c, const ex_node *col, pr_expr **out)
{
    return leaf(c, col, PR_E_NOT_NULL, PR_EQ, NULL, 0, out);
}

/* Integer column X (kind I64, or I128 at `scale`) and a condition X*m op t
 * for a rational t: X op' bound, with q_floor = floor(t/m), q_ceil =
 * ceil(t/m) and exact_div when t/m is an integer (X*m < t <=> X < ceil(t/m),
 * X*m <= t <=> X <= floor(t/m), and so on). */
static hs_status scaled_leaf(conv *c, const ex_node *col, pr_vkind kind, int scale, pr_op op,
                             __int128 q_floor, __int128 q_ceil, bool exact_div, pr_expr **out)
{
    __int128 bound;
    switch (op) {
    case PR_EQ:
        if (!exact_div)
            return konst(c, false, out);
        bound = q_floor;
        break;
    case PR_NE:
        if (!exact_div)
            return not_null(c, col, out);
        bound = q_floor;
        break;
    case PR_LT: case PR_GE: bound = q_ceil; break;
    default: bound = q_floor; break;
    }
    __int128 lo, hi;
    if (kind == PR_V_I64) {
        lo = INT64_MIN;
        hi = INT64_MAX;
    } else {
        hi = 1;
        for (int i = 0; i < 38; i++)
            hi *= 10;
        hi -= 1;
        lo = -hi;
    }
    if (bound > hi || bound < lo) {
        bool above = bound > hi;
        /* every value is below (above) the bound */
        bool all = op == PR_NE || (above ? (op == PR_LT || op == PR_LE) : (op == PR_GT || op == PR_GE));
        return all ? not_null(c, col, out) : konst(c, false, out);
    }
    pr_val v;
    memset(&v, 0, sizeof v);
    v.kind = kind;
    if (kind == PR_V_I64)
        v.i = (int64_t)bound;
    else {
        v.d = bound;
        v.scale = scale;
    }
    return leaf1(c, col, op, &v, out);
}

static __int128 floor_div128(__int128 a, __int128 b)
{
    __int128 q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* Leaf for (column op constant); col_side is the (possibly cast) column
 * node, k the constant node. */
static hs_status leaf_cmp(conv *c, const ex_node *col_side, const ex_node *k, pr_op op, bool *exact,
                          pr_expr **out)
{
    __int128 m;
    const ex_node *col = column_of(col_side, &m);
    if (!col || m == 0 || pr_kind_of(col->field) == PR_V_NULL) {
        *exact = false;
        return konst(c, true, out);
    }
    if (k->val.null)
        return konst(c, false, out); /* NULL comparisons are never TRUE */
    pr_vkind kind = pr_kind_of(col->field);
    const ex_ty *ct = &col->type, *kt = &k->type;
    const ex_value *kv = &k->val;
    pr_val v;
    memset(&v, 0, sizeof v);
    switch (ct->t) {
    case EX_T_BOOL:
        if (kt->t != EX_T_BOOL)
            break;
        v.kind = PR_V_I64;
        v.i = kv->i;
        return leaf1(c, col, op, &v, out);
    case EX_T_INT: case EX_T_DATE: case EX_T_TS: case EX_T_TIME:
        if (kind != PR_V_I64)
            break;
        if (kt->t == EX_T_FLOAT) {
            double x = kv->f;
            if (isnan(x)) /* NaN sorts above every integer */
                return op == PR_LT || op == PR_LE || op == PR_NE ? not_null(c, col, out)
                                                                      : konst(c, false, out);
            double fl = floor(x), ce = ceil(x);
            __int128 qf = fl >= 1e38 ? ((__int128)1 << 126) : fl <= -1e38 ? -((__int128)1 << 126) : (__int128)fl;
            __int128 qc = ce >= 1e38 ? ((__int128)1 << 126) : ce <= -1e38 ? -((__int128)1 << 126) : (__int128)ce;
            return scaled_leaf(c, col, PR_V_I64, 0, op, qf, qc, fl == x, out);
        }
        if (kt->t == EX_T_DEC) {
            /* column cast to a scale-0 decimal: m = 1; constant d / 10^s */
            __int128 p = 1;
            for (int i = 0; i < kt->scale; i++)
                p *= 10;
            __int128 d = kv->d;
            __int128 qf = floor_div128(d, p), qc = -floor_div128(-d, p);
            return scaled_leaf(c, col, PR_V_I64, 0, op, qf, qc, d % p == 0, out);
        }
        if (kt->t == EX_T_INT || kt->t == EX_T_DATE || kt->t == EX_T_TS || kt->t == EX_T_TIME) {
            __int128 t = kv->i;
            __int128 qf = floor_div128(t, m), qc = -floor_div128(-t, m);
            return scaled_leaf(c, col, PR_V_I64, 0, op, qf, qc, t % m == 0, out);
        }
        break;
    case EX_T_DEC: {
        if (kind != PR_V_I128 || kt->t != EX_T_DEC)
            break;
        int sc = ct->scale, s = kt->scale;
        __int128 d = kv->d;
        if (s <= sc) {
            __int128 x = d;
            bool ovf = false;
            for (int i = s; i < sc && !ovf; i++)
                ovf = __builtin_mul_overflow(x, (__int128)10, &x);
            if (ovf)
                x = d < 0 ? -((__int128)1 << 126) : ((__int128)1 << 126);
            return scaled_leaf(c, col, PR_V_I128, sc, op, x, x, true, out);
        }
        __int128 p = 1;
        for (int i = sc; i < s; i++)
            p *= 10;
        __int128 qf = floor_div128(d, p), qc = -floor_div128(-d, p);
        return scaled_leaf(c, col, PR_V_I128, sc, op, qf, qc, d % p == 0, out);
    }
    case EX_T_FLOAT: {
        if (kind != PR_V_F64)
            break;
        double x;
        if (kt->t == EX_T_FLOAT) {
            x = kv->f;
        } else if (kt->t == EX_T_INT) {
            x = (double)kv->i;
            bool exact_conv = x < 9223372036854775808.0 && x >= -9223372036854775808.0 &&
                              (int64_t)x == kv->i;
            if (!exact_conv) {
                /* no double equals the integer: move to the doubles around it */
                bool above = x > 0 ? (x >= 9223372036854775808.0 || (int64_t)x > kv->i)
                                   : (int64_t)x > kv->i;
                double lo = above ? nextafter(x, -INFINITY) : x, hi = above ? x : nextafter(x, INFINITY);
                if (op == PR_EQ)
                    return konst(c, false, out);
                if (op == PR_NE)
                    return not_null(c, col, out);
                if (op == PR_LT || op == PR_LE) {
                    op = PR_LE;
                    x = lo;
                } else {
                    op = PR_GE;
                    x = hi;
                }
            }
        } else {
            break;
        }
        v.kind = PR_V_F64;
        if (isnan(x)) {
            v.f = x;
            switch (op) {
            case PR_EQ: case PR_GE: return leaf1(c, col, PR_EQ, &v, out);
            case PR_NE: case PR_LT: return leaf1(c, col, PR_NE, &v, out);
            case PR_LE: return not_null(c, col, out);
            default: return konst(c, false, out);
            }
        }
        v.f = x;
        pr_expr *l;
        HS_TRY(leaf1(c, col, op, &v, &l));
        if (op != PR_GT && op != PR_GE) {
            *out = l;
            return HS_OK;
        }
        pr_val nan;
        memset(&nan, 0, sizeof nan);
        nan.kind = PR_V_F64;
        nan.f = NAN;
        pr_expr *r;
        HS_TRY(leaf(c, col, PR_E_IN, PR_EQ, &nan, 1, &r));
        return join(c, PR_E_OR, l, r, out);
    }
    case EX_T_STR: case EX_T_BIN:
        if (kind != PR_V_BYTES || (kt->t != EX_T_STR && kt->t != EX_T_BIN && kt->t != EX_T_UNKNOWN))
            break;
        v.kind = PR_V_BYTES;
        v.p = kv->s.p;
        v.n = kv->s.n;
        return leaf1(c, col, op, &v, out);
    default:
        break;
    }
    *exact = false;
    return konst(c, true, out);
}

/* One IN item as a value of the column's kind; false when no column value
 * can equal it. */
static bool item_val(const ex_node *col, __int128 m, const ex_node *k, pr_val *v)
{
    memset(v, 0, sizeof *v);
    const ex_ty *ct = &col->type, *kt = &k->type;
    const ex_value *kv = &k->val;
    switch (ct->t) {
    case EX_T_BOOL: case EX_T_INT: case EX_T_DATE: case EX_T_TS: case EX_T_TIME: {
        __int128 t, p = 1;
        if (kt->t == EX_T_DEC) {
            t = kv->d;
            for (int i = 0; i < kt->scale; i++)
                p *= 10;
        } else if (kt->t == EX_T_FLOAT) {
            double x = kv->f;
            if (!(x == floor(x)) || fabs(x) >= 9.2e18)
                return false;
            t = (__int128)x;
            p = m;
        } else {
            t = kv->i;
            p = m;
        }
        if (t % p != 0)
            return false;
        t /= p;
        if (t > INT64_MAX || t < INT64_MIN)
            return false;
        v->kind = PR_V_I64;
        v->i = (int64_t)t;
        return true;
    }
    case EX_T_FLOAT:
        if (kt->t != EX_T_FLOAT)
            return false;
        v->kind = PR_V_F64;
        v->f = kv->f;
        return true;
    case EX_T_DEC: {
        if (kt->t != EX_T_DEC)
            return false;
        int sc = ct->scale, s = kt->scale;
        __int128 d = kv->d;
        if (s <= sc) {
            for (int i = s; i < sc; i++)
                if (__builtin_mul_overflow(d, (__int128)10, &d))
                    return false;
        } else {
            __int128 p = 1;
            for (int i = sc; i < s; i++)
                p *= 10;
            if (d % p != 0)
                return false;
            d /= p;
        }
        v->kind = PR_V_I128;
        v->d = d;
        v->scale = sc;
        return true;
    }
    case EX_T_STR: case EX_T_BIN:
        if (kt->t != EX_T_STR && kt->t != EX_T_BIN && kt->t != EX_T_UNKNOWN)
            return false;
        v->kind = PR_V_BYTES;
        v->p = kv->s.p;
        v->n = kv->s.n;
        return true;
    default:
        return false;
    }
}

static hs_status conv_in(conv *c, const ex_node *n, bool neg, bool *exact, pr_expr **out)
{
    __int128 m;
    const ex_node *col = column_of(n->args[0], &m);
    bool not_in = n->neg != neg;
    bool ok = col && m != 0 && pr_kind_of(col->field) != PR_V_NULL &&
              (col->type.t != EX_T_DEC || n->args[1]->type.t == EX_T_DEC);
    if (ok && col->type.t != EX_T_FLOAT && n->args[1]->type.t == EX_T_FLOAT)
        ok = col->type.t == EX_T_INT && m == 1;
    for (int i = 1; i < n->n_args && ok; i++)
        ok = n->args[i]->kind == EX_CONST;
    if (!ok) {
        *exact = false;
        return konst(c, true, out);
    }
    bool has_null = false;
    pr_val *vals = hs_calloc((size_t)n->n_args, sizeof *vals);
    if (!vals)
        return nomem(c);
    int nv = 0;
    for (int i = 1; i < n->n_args; i++) {
        if (n->args[i]->val.null) {
            has_null = true;
            continue;
        }
        if (item_val(col, m, n->args[i], &vals[nv]))
            nv++;
    }
    hs_status st;
    if (not_in && has_null)
        st = konst(c, false, out);            /* x NOT IN (.., NULL) is never TRUE */
    else if (nv == 0)
        st = not_in ? not_null(c, col, out) : konst(c, false, out);
    else
        st = leaf(c, col, not_in ? PR_E_NOT_IN : PR_E_IN, PR_EQ, vals, nv, out);
    hs_free(vals);
    return st;
}

static hs_status conv_like(conv *c, const ex_node *n, bool neg, bool *exact, pr_expr **out)
{
    __int128 m;
    const ex_node *col = column_of(n->args[0], &m);
    bool not_like = n->neg != neg;
    if (!col || col->type.t != EX_T_STR || !n->pat || n->ci || pr_kind_of(col->field) != PR_V_BYTES) {
        *exact = false;
        return konst(c, true, out);
    }
    const ex_like *p = n->pat;
    int k = 0;
    while (k < p->n && p->ops[k].kind == 0)
        k++;
    uint8_t *prefix = hs_arena_alloc(&c->f->arena, (size_t)k + 1);
    if (!prefix)
        return nomem(c);
    for (int i = 0; i < k; i++)
        prefix[i] = p->ops[i].byte;
    pr_val v;
    memset(&v, 0, sizeof v);
    v.kind = PR_V_BYTES;
    v.p = prefix;
    v.n = (size_t)k;
    if (k == p->n) /* no wildcard: equality */
        return leaf1(c, col, not_like ? PR_NE : PR_EQ, &v, out);
    if (not_like) {
        *exact = false;
        return konst(c, true, out);
    }
    bool only_trailing_any = k == p->n - 1 && p->ops[k].kind == 2;
    if (!only_trailing_any)
        *exact = false;
    if (k == 0) {
        if (only_trailing_any)
            return not_null(c, col, out);
        return konst(c, true, out);
    }
    pr_expr *lo;
    HS_TRY(leaf1(c, col, PR_GE, &v, &lo));
    /* the successor of the prefix: increment the last byte below 0xFF */
    int len = k;
    while (len > 0 && prefix[len - 1] == 0xFF)
        len--;
    if (len == 0) {
        *out = lo;
        return HS_OK;
    }
    uint8_t *succ = hs_arena_alloc(&c->f->arena, (size_t)len);
    if (!succ)
        return nomem(c);
    memcpy(succ, prefix, (size_t)len);
    succ[len - 1]++;
    pr_val w = v;
    w.p = succ;
    w.n = (size_t)len;
    pr_expr *hi;
    HS_TRY(leaf1(c, col, PR_LT, &w, &hi));
    return join(c, PR_E_AND, lo, hi, out);
}

static hs_status cv(conv *c, const ex_node *n, bool neg, int depth, bool *exact, pr_expr **out);

static hs_status conv_booltest(conv *c, const ex_node *n, bool neg, int depth, bool *exact,
                               pr_expr **out)
{
    int t = n->op;
    if (neg) /* the tests are never NULL, so NOT is the complementary test */
        t = t ^ 1;
    if (t == EX_IS_TRUE)
        return cv(c, n->args[0], false, depth + 1, exact, out);
    if (t == EX_IS_FALSE)
        return cv(c, n->args[0], true, depth + 1, exact, out);
    const ex_node *x = n->args[0];
    if (x->kind == EX_COL && !x->sub && x->type.t == EX_T_BOOL && pr_kind_of(x->field) == PR_V_I64) {
        if (t == EX_IS_UNKNOWN || t == EX_IS_NOT_UNKNOWN)
            return leaf(c, x, t == EX_IS_UNKNOWN ? PR_E_IS_NULL : PR_E_NOT_NULL, PR_EQ, NULL, 0, out);
        pr_val v;
        memset(&v, 0, sizeof v);
        v.kind = PR_V_I64;
        v.i = t == EX_IS_NOT_FALSE; /* IS NOT TRUE: = false or null; IS NOT FALSE: = true or null */
        pr_expr *l = NULL, *r = NULL;
        HS_TRY(leaf1(c, x, PR_EQ, &v, &l));
        HS_TRY(leaf(c, x, PR_E_IS_NULL, PR_EQ, NULL, 0, &r));
        return join(c, PR_E_OR, l, r, out);
    }
    if (t == EX_IS_UNKNOWN || t == EX_IS_NOT_UNKNOWN) {
        *exact = false;
        return konst(c, true, out);
    }
    *exact = false;
    return konst(c, true, out);
}

static hs_status cv(conv *c, const ex_node *n, bool neg, int depth, bool *exact, pr_expr **out)
{
    if (depth > 4 * EX_MAX_DEPTH) {
        *exact = false;
        return konst(c, true, out);
    }
    switch (n->kind) {
    case EX_CONST:
        if (n->type.t != EX_T_BOOL || n->val.null)
            return konst(c, false, out);
        return konst(c, (n->val.i != 0) != neg, out);
    case EX_NOT:
        return cv(c, n->args[0], !neg, depth + 1, exact, out);
    case EX_AND: case EX_OR: {
        pr_ekind k = (n->kind == EX_AND) != neg ? PR_E_AND : PR_E_OR;
        pr_expr *acc;
        HS_TRY(cv(c, n->args[0], neg, depth + 1, exact, &acc));
        for (int i = 1; i < n->n_args; i++) {
            pr_expr *x;
            HS_TRY(cv(c, n->args[i], neg, depth + 1, exact, &x));
            HS_TRY(join(c, k, acc, x, &acc));
        }
        *out = acc;
        return HS_OK;
    }
    case EX_COL:
        if (n->type.t == EX_T_BOOL && pr_kind_of(n->field) == PR_V_I64) {
            pr_val v;
            memset(&v, 0, sizeof v);
            v.kind = PR_V_I64;
            v.i = !neg;
            return leaf1(c, n, PR_EQ, &v, out);
        }
        break;
    case EX_CMP: {
        const ex_node *l = n->args[0], *r = n->args[1];
        pr_op op = (pr_op)n->op;
        if (neg)
            op = negate_op(op);
        if (r->kind == EX_CONST && l->kind != EX_CONST)
            return leaf_cmp(c, l, r, op, exact, out);
        if (l->kind == EX_CONST && r->kind != EX_CONST)
            return leaf_cmp(c, r, l, flip_op(op), exact, out);
        break;
    }
    case EX_IN:
        return conv_in(c, n, neg, exact, out);
    case EX_BETWEEN: {
        const ex_node *x = n->args[0], *lo = n->args[1], *hi = n->args[2];
        if (x->kind == EX_CONST || lo->kind != EX_CONST || hi->kind != EX_CONST)
            break;
        /* x >= lo AND x <= hi; NOT BETWEEN: x < lo OR x > hi */
        bool nb = n->neg != neg;
        pr_ekind k = nb ? PR_E_OR : PR_E_AND;
        pr_expr *a, *z, *r;
        HS_TRY(leaf_cmp(c, x, lo, nb ? PR_LT : PR_GE, exact, &a));
        HS_TRY(leaf_cmp(c, x, hi, nb ? PR_GT : PR_LE, exact, &z));
        HS_TRY(join(c, k, a, z, &r));
        if (n->aux) { /* SYMMETRIC: also x >= hi AND x <= lo (NOT: AND x < hi OR x > lo) */
            pr_expr *a2, *z2, *r2;
            HS_TRY(leaf_cmp(c, x, hi, nb ? PR_LT : PR_GE, exact, &a2));
            HS_TRY(leaf_cmp(c, x, lo, nb ? PR_GT : PR_LE, exact, &z2));
            HS_TRY(join(c, k, a2, z2, &r2));
            HS_TRY(join(c, nb ? PR_E_AND : PR_E_OR, r, r2, &r));
        }
        *out = r;
        return HS_OK;
    }
    case EX_IS_NULL: {
        __int128 m;
        const ex_node *col = column_of(n->args[0], &m);
        if (!col && n->args[0]->kind == EX_CAST && n->args[0]->args[0]->kind == EX_COL)
            col = n->args[0]->args[0]; /* casts keep nulls and never make them */
        if (!col && n->args[0]->kind == EX_COL)
            col = n->args[0]; /* a pgvector column */
        if (col && col->sub)
            col = NULL;
        /* no null leaves on nested columns (lists, structs: vector and
         * sparsevec columns): Iceberg keeps null counts on their leaf
         * fields only, and table/plan.c reads a field without counts as a
         * column added later, all null, which pruned every file */
        if (col && col->field && (col->field->type == HS_TYPE_LIST || col->field->type == HS_TYPE_FIXED_LIST ||
                                  col->field->type == HS_TYPE_STRUCT || col->field->type == HS_TYPE_MAP))
            col = NULL;
        if (col)
            return leaf(c, col, n->neg != neg ? PR_E_NOT_NULL : PR_E_IS_NULL, PR_EQ, NULL, 0, out);
        break;
    }
    case EX_BOOLTEST:
        return conv_booltest(c, n, neg, depth, exact, out);
    case EX_LIKE:
        return conv_like(c, n, neg, exact, out);
    default:
        break;
    }
    *exact = false;
    return konst(c, true, out);
}

hs_status ex_to_pred(const ex_expr *e, pr_filter **out, bool *exact, hs_error *err)
{
    *out = NULL;
    *exact = true;
    pr_filter *f = hs_calloc(1, sizeof *f);
    if (!f)
        return hs_err_nomem(err, sizeof *f);
    conv c = {.f = f, .err = err};
    hs_status st = cv(&c, e->root, false, 0, exact, &f->root);
    if (st != HS_OK) {
        pr_filter_free(f);
        *exact = false;
        return st;
    }
    f->bound = true;
    *out = f;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* ex_format                                                           */

static hs_status put_name(hs_buf *o, const char *s)
{
    bool plain = *s && !(*s >= '0' && *s <= '9');
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
    char cat = plain ? ex_keyword_category(s) : 0;
    if (plain && cat != 'R' && cat != 'T')   /* "user", "window": quoted */
        return hs_buf_puts(o, s);
    HS_TRY(hs_buf_append_byte(o, '"'));
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            HS_TRY(hs_buf_append_byte(o, '"'));
        HS_TRY(hs_buf_append_byte(o, (uint8_t)*p));
    }
    return hs_buf_append_byte(o, '"');
}

static hs_status put_quoted(hs_buf *o, const uint8_t *p, size_t n)
{
    HS_TRY(hs_buf_append_byte(o, '\''));
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\'')
            HS_TRY(hs_buf_append_byte(o, '\''));
        HS_TRY(hs_buf_append_byte(o, p[i]));
    }
    return hs_buf_append_byte(o, '\'');
}

/* A type name the parser reads back (ex_type_name is for messages). */
static const char *type_sql(const ex_ty *t, char *buf, size_t n)
{
    switch (t->t) {
    case EX_T_BOOL: return "boolean";
    case EX_T_INT: return t->bits <= 16 ? "smallint" : t->bits == 32 ? "integer" : "bigint";
    case EX_T_FLOAT: return t->bits == 32 ? "real" : "double precision";
    case EX_T_DEC:
        snprintf(buf, n, "decimal(%d,%d)", t->prec, t->scale);
        return buf;
    case EX_T_BIN: return t->uuid ? "uuid" : "bytea";
    case EX_T_DATE: return "date";
    case EX_T_TS:
        if (t->tz)
            return "timestamptz";
        return t->unit == HS_UNIT_SECOND ? "timestamp_s" : t->unit == HS_UNIT_MILLI ? "timestamp_ms"
             : t->unit == HS_UNIT_NANO ? "timestamp_ns" : "timestamp";
    case EX_T_TIME: return "time";
    case EX_T_VEC: case EX_T_HALFVEC: case EX_T_SPARSEVEC: case EX_T_BIT: {
        const char *nm = t->t == EX_T_VEC ? "vector" : t->t == EX_T_HALFVEC ? "halfvec"
                       : t->t == EX_T_SPARSEVEC ? "sparsevec" : "bit";
        if (t->dim > 0)
            snprintf(buf, n, "%s(%d)", nm, (int)t->dim);
        else
            snprintf(buf, n, "%s", t->t == EX_T_BIT ? "varbit" : nm);
        return buf;
    }
    case EX_T_ARRAY:
        return t->elem == PV_E_TEXT ? "text[]" : t->elem == PV_E_INT4 ? "integer[]" : t->elem == PV_E_FLOAT4 ? "real[]"
             : t->elem == PV_E_INT8 ? "bigint[]"
             : t->elem == PV_E_FLOAT8 ? "double precision[]" : "numeric[]";
    default: return "varchar";
    }
}

static hs_status fmt_const(hs_buf *o, const ex_node *n)
{
    const ex_ty *t = &n->type;
    const ex_value *v = &n->val;
    char tb[48];
    if (t->t == EX_T_NULL || (v->null && t->t == EX_T_UNKNOWN))
        return hs_buf_puts(o, "NULL");
    if (v->null) /* typed: CAST(NULL AS date) - dt is not NULL - dt */
        return hs_buf_printf(o, "CAST(NULL AS %s)", type_sql(t, tb, sizeof tb));
    switch (t->t) {
    case EX_T_BOOL: return hs_buf_puts(o, v->i ? "true" : "false");
    case EX_T_INT: return hs_buf_printf(o, "%lld", (long long)v->i);
    case EX_T_DEC: return ex_value_text(t, v, o);
    case EX_T_UNKNOWN: return put_quoted(o, v->s.p, v->s.n);
    case EX_T_STR:
        HS_TRY(put_quoted(o, v->s.p, v->s.n));
        return hs_buf_puts(o, "::varchar");
    default: break;
    }
    if (ex_is_pvx(t->t)) { /* '[1,2]'::vector, '{1,2}'::real[] */
        hs_buf tmp = {0};
        hs_status st = ex_value_text(t, v, &tmp);
        if (st == HS_OK)
            st = put_quoted(o, tmp.data, tmp.len);
        hs_buf_free(&tmp);
        HS_TRY(st);
        return hs_buf_printf(o, "::%s", type_sql(t, tb, sizeof tb));
    }
    hs_buf tmp = {0};
    hs_status st = ex_value_text(t, v, &tmp);
    if (st == HS_OK) {
        static const char *const pre[] = {[EX_T_DATE] = "DATE ", [EX_T_TS] = "TIMESTAMP ",
                                          [EX_T_TIME] = "TIME "};
        if (t->t == EX_T_DATE || t->t == EX_T_TS || t->t == EX_T_TIME)
            st = hs_buf_puts(o, pre[t->t]);
        if (st == HS_OK)
            st = put_quoted(o, tmp.data, tmp.len);
        if (st == HS_OK && t->t == EX_T_FLOAT)
            st = hs_buf_puts(o, "::double");
        if (st == HS_OK && t->t == EX_T_BIN)
            st = hs_buf_puts(o, t->uuid ? "::uuid" : "::bytea");
    }
    hs_buf_free(&tmp);
    return st;
}

static const char *fn_name(int fn)
{
    static const char *const names[] = {"lower", "upper", "length", "abs", "round", "floor", "ceil",
                                        "sqrt", "starts_with", "substr", "btrim", "ltrim", "rtrim",
                                        "concat", "date_part", "date_trunc", "replace",
                                        "strpos", "left", "right", "repeat", "reverse",
                                        "split_part", "sign", "trunc", "?math", "power", "log",
                                        "atan2", "div", "hs_numeric_stat", "lpad", "rpad", "concat_ws", "translate",
                                        "md5", "chr", "ascii", "octet_length", "bit_length",
                                        "initcap", "make_date", "regexp_like", "regexp_replace",
                                        "regexp_count", "regexp_substr", "to_char", "?elem",
                                        "cardinality", "array_length", "array_to_string",
                                        "array_position", "?any", "justify_days",
                                        "justify_hours", "justify_interval", "age"};
    _Static_assert(sizeof names / sizeof names[0] == EX_FN_AGE + 1,
                   "a name per function before pgvector's");
    return fn >= 0 && fn < (int)(sizeof names / sizeof names[0]) ? names[fn] : "?";
}

static const char *dfield_name(int f)
{
    static const char *const names[] = {"year", "quarter", "month", "week", "day", "hour", "minute",
                                        "second", "dow", "doy", "epoch", "millisecond", "microsecond"};
    return f >= 0 && f < (int)(sizeof names / sizeof names[0]) ? names[f] : "?";
}

static hs_status fmt(hs_buf *o, const ex_node *n, int depth);

/* pgvector's operators and functions, as text that binds back to them */
static hs_status fmt_pv_func(hs_buf *o, const ex_node *n, int depth)
{
    static const char *const dist_op[] = {[PV_L2] = "<->", [PV_NEG_IP] = "<#>", [PV_COSINE] = "<=>",
                                          [PV_L1] = "<+>", [PV_HAMMING] = "<~>", [PV_JACCARD] = "<%>"};
    const char *name = NULL;
    switch ((ex_fn)n->op) {
    case EX_FN_PV_DIST:
        if (n->aux == PV_IP)
            name = "inner_product";
        else if (n->aux == PV_L2_SQUARED)
            name = "vector_l2_squared_distance";
        else {
            HS_TRY(hs_buf_puts(o, "("));
            HS_TRY(fmt(o, n->args[0], depth + 1));
            HS_TRY(hs_buf_printf(o, " %s ", dist_op[n->aux]));
            HS_TRY(fmt(o, n->args[1], depth + 1));
            return hs_buf_puts(o, ")");
        }
        break;
    case EX_FN_PV_DIMS: name = "vector_dims"; break;
    case EX_FN_PV_NORM: name = n->args[0]->type.t == EX_T_VEC ? "vector_norm" : "l2_norm"; break;
    case EX_FN_PV_NORMALIZE: name = "l2_normalize"; break;
    case EX_FN_PV_QUANTIZE: name = "binary_quantize"; break;
    case EX_FN_PV_SUBVECTOR: name = "subvector"; break;
    case EX_FN_PV_ARRAY: name = "ARRAY"; break;
    default: name = "?"; break;
    }
    bool arr = n->op == EX_FN_PV_ARRAY;
    HS_TRY(hs_buf_printf(o, "%s%c", name, arr ? '[' : '('));
    for (int i = 0; i < n->n_args; i++) {
        if (i)
            HS_TRY(hs_buf_puts(o, ", "));
        HS_TRY(fmt(o, n->args[i], depth + 1));
    }
    return hs_buf_puts(o, arr ? "]" : ")");
}

static hs_status fmt(hs_buf *o, const ex_node *n, int depth)
{
    if (depth > 4 * EX_MAX_DEPTH)
        return hs_buf_puts(o, "...");
    static const char *const cmp_ops[] = {"=", "<>", "<", "<=", ">", ">="};
    char tb[48];
    switch (n->kind) {
    case EX_CONST: return fmt_const(o, n);
    case EX_COL:
        if (n->path_len == 0)
            return put_name(o, n->name);
        for (int i = 0; i < n->path_len; i++) {
            if (i)
                HS_TRY(hs_buf_append_byte(o, '.'));
            HS_TRY(put_name(o, n->path[i]));
        }
        return HS_OK;
    case EX_NOT:
        HS_TRY(hs_buf_puts(o, "(NOT "));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        return hs_buf_puts(o, ")");
    case EX_AND: case EX_OR:
        HS_TRY(hs_buf_puts(o, "("));
        for (int i = 0; i < n->n_args; i++) {
            if (i)
                HS_TRY(hs_buf_puts(o, n->kind == EX_AND ? " AND " : " OR "));
            HS_TRY(fmt(o, n->args[i], depth + 1));
        }
        return hs_buf_puts(o, ")");
    case EX_CMP: case EX_DISTINCT: case EX_ARITH: {
        const char *op = n->kind == EX_DISTINCT ? (n->neg ? "IS NOT DISTINCT FROM" : "IS DISTINCT FROM")
                       : n->kind == EX_CMP ? cmp_ops[n->op % 6] : NULL;
        char ab[3] = {(char)n->op, 0, 0};
        if (!op)
            op = n->op == '|' ? "||" : ab;
        HS_TRY(hs_buf_puts(o, "("));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        HS_TRY(hs_buf_printf(o, " %s ", op));
        HS_TRY(fmt(o, n->args[1], depth + 1));
        return hs_buf_puts(o, ")");
    }
    case EX_IN:
        HS_TRY(hs_buf_puts(o, "("));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        HS_TRY(hs_buf_puts(o, n->neg ? " NOT IN (" : " IN ("));
        for (int i = 1; i < n->n_args; i++) {
            if (i > 1)
                HS_TRY(hs_buf_puts(o, ", "));
            HS_TRY(fmt(o, n->args[i], depth + 1));
        }
        return hs_buf_puts(o, "))");
    case EX_IS_NULL:
        HS_TRY(hs_buf_puts(o, "("));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        return hs_buf_puts(o, n->neg ? " IS NOT NULL)" : " IS NULL)");
    case EX_BOOLTEST: {
        static const char *const t[] = {" IS TRUE)", " IS NOT TRUE)", " IS FALSE)", " IS NOT FALSE)",
                                        " IS UNKNOWN)", " IS NOT UNKNOWN)"};
        HS_TRY(hs_buf_puts(o, "("));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        return hs_buf_puts(o, t[n->op % 6]);
    }
    case EX_LIKE:
        HS_TRY(hs_buf_puts(o, "("));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        HS_TRY(hs_buf_printf(o, " %s%s ", n->neg ? "NOT " : "", n->ci ? "ILIKE" : "LIKE"));
        HS_TRY(fmt(o, n->args[1], depth + 1));
        if (n->esc != '\\') {
            uint8_t e = (uint8_t)n->esc;
            HS_TRY(hs_buf_puts(o, " ESCAPE "));
            HS_TRY(put_quoted(o, &e, n->esc < 0 ? 0 : 1));
        }
        return hs_buf_puts(o, ")");
    case EX_NEG:
        HS_TRY(hs_buf_puts(o, "(- "));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        return hs_buf_puts(o, ")");
    case EX_CAST:
        HS_TRY(hs_buf_puts(o, "CAST("));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        return hs_buf_printf(o, " AS %s)", type_sql(&n->type, tb, sizeof tb));
    case EX_CASE: {
        HS_TRY(hs_buf_puts(o, "CASE"));
        int off = n->aux ? 1 : 0, nw = (n->n_args - 1 - off) / 2;
        if (n->aux) {
            HS_TRY(hs_buf_puts(o, " "));
            HS_TRY(fmt(o, n->args[0], depth + 1));
        }
        for (int w = 0; w < nw; w++) {
            HS_TRY(hs_buf_puts(o, " WHEN "));
            HS_TRY(fmt(o, n->args[off + 2 * w], depth + 1));
            HS_TRY(hs_buf_puts(o, " THEN "));
            HS_TRY(fmt(o, n->args[off + 2 * w + 1], depth + 1));
        }
        HS_TRY(hs_buf_puts(o, " ELSE "));
        HS_TRY(fmt(o, n->args[n->n_args - 1], depth + 1));
        return hs_buf_puts(o, " END");
    }
    case EX_BETWEEN:
        HS_TRY(hs_buf_puts(o, "("));
        HS_TRY(fmt(o, n->args[0], depth + 1));
        HS_TRY(hs_buf_printf(o, " %sBETWEEN %s", n->neg ? "NOT " : "", n->aux ? "SYMMETRIC " : ""));
        HS_TRY(fmt(o, n->args[1], depth + 1));
        HS_TRY(hs_buf_puts(o, " AND "));
        HS_TRY(fmt(o, n->args[2], depth + 1));
        return hs_buf_puts(o, ")");
    case EX_FUNC:
        if (n->op >= EX_FN_PV_DIST)
            return fmt_pv_func(o, n, depth);
        /* fall through */
    case EX_COALESCE: case EX_NULLIF: {
        if (n->kind == EX_FUNC && n->op == EX_FN_REGEX && n->n_args == 2) { /* s [!]~[*] p */
            HS_TRY(hs_buf_puts(o, "("));
            HS_TRY(fmt(o, n->args[0], depth + 1));
            HS_TRY(hs_buf_printf(o, " %s~%s ", n->neg ? "!" : "", n->ci ? "*" : ""));
            HS_TRY(fmt(o, n->args[1], depth + 1));
            return hs_buf_puts(o, ")");
        }
        if (n->kind == EX_FUNC && n->op == EX_FN_LIST_ANY) { /* (x op ANY(a)) */
            static const char *const ops[] = {"=", "<>", "<", "<=", ">", ">="};
            HS_TRY(hs_buf_puts(o, "("));
            HS_TRY(fmt(o, n->args[1], depth + 1));
            HS_TRY(hs_buf_printf(o, " %s %s(", ops[n->aux % 6], n->neg ? "ALL" : "ANY"));
            HS_TRY(fmt(o, n->args[0], depth + 1));
            return hs_buf_puts(o, "))");
        }
        if (n->kind == EX_FUNC && n->op == EX_FN_ARR_ELEM) { /* a[i] of a column */
            HS_TRY(fmt(o, n->args[0], depth + 1));
            HS_TRY(hs_buf_puts(o, "["));
            HS_TRY(fmt(o, n->args[1], depth + 1));
            return hs_buf_puts(o, "]");
        }
        static const char *const math[] = {"exp", "ln", "log10", "cbrt", "sin", "cos", "tan",
                                           "asin", "acos", "atan", "degrees", "radians"};
        const char *name = n->kind == EX_COALESCE ? "COALESCE" : n->kind == EX_NULLIF ? "NULLIF"
                           : n->op == EX_FN_MATH && n->aux >= 0 && n->aux < (int)(sizeof math / sizeof math[0])
                               ? math[n->aux] : fn_name(n->op);
        HS_TRY(hs_buf_printf(o, "%s(", name));
        if (n->kind == EX_FUNC && (n->op == EX_FN_DATE_PART || n->op == EX_FN_DATE_TRUNC))
            HS_TRY(hs_buf_printf(o, "'%s', ", dfield_name(n->aux)));
        for (int i = 0; i < n->n_args; i++) {
            if (i)
                HS_TRY(hs_buf_puts(o, ", "));
            HS_TRY(fmt(o, n->args[i], depth + 1));
        }
        if (n->kind == EX_FUNC && (n->op == EX_FN_ROUND || n->op == EX_FN_TRUNC) && n->aux)
            HS_TRY(hs_buf_printf(o, ", %d", n->aux));
        return hs_buf_puts(o, ")");
    }
    }
    return hs_buf_puts(o, "?");
}

hs_status ex_format(const ex_expr *e, char **out, hs_error *err)
{
    *out = NULL;
    hs_buf o = {0};
    hs_status st = fmt(&o, e->root, 0);
    if (st != HS_OK) {
        hs_buf_free(&o);
        return hs_err_nomem(err, o.len);
    }
    *out = (char *)hs_buf_detach(&o, NULL);
    return *out ? HS_OK : hs_err_nomem(err, 0);
}
