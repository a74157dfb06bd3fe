/*
 * expr/expr_bind.c - from text to a bound expression tree.
 *
 * Pipeline:
 *
 *   text --("SELECT 1 FROM t WHERE " + text)--> pg_query_parse --> JSON
 *        --jansson--> check: one SelectStmt, nothing but the WHERE clause
 *        --exb_bind()--> ex_node tree (types checked, implicit casts explicit,
 *                    constants folded)
 *
 * libpg_query gives PostgreSQL's own grammar, so anything PostgreSQL accepts
 * after WHERE parses; exb_bind() then accepts the subset expr.h lists and rejects
 * the rest with HS_UNSUPPORTED and the position of the construct.  Locations
 * in the JSON count bytes of the whole query: subtracting the prefix length
 * gives offsets into the user's text, which ex_err_at turns into
 * "at character N" and a caret line.
 *
 * Two quirks of libpg_query 15-4.0.0's JSON output are handled here:
 *   - integer constants that are zero or negative print as "ival": {} (the
 *     value is lost), so the value is read back from the text at the
 *     constant's location (a '-' folded into the constant starts there;
 *     the SQL session writes the value into the tree when it parses,
 *     sql/session.c fill_ivals, so that parse trees compare right);
 *   - its output functions recurse once per nesting level, so text whose
 *     nesting could exhaust the stack is refused before parsing (nest_bound).
 *
 * Binding follows PostgreSQL's rules for types, with DuckDB's choices where
 * PostgreSQL has no operator (decimal / decimal is double, double % double
 * is fmod): see expr.h for the semantics and expr_eval.c for the kernels.
 * Function calls bind in expr_bindfn.c, arrays and structs (ANY/ALL, @>,
 * (s).f, a[i]) in expr_bindarr.c, the pgvector types in expr_bindpv.c.
 */
#include "expr/expr_int.h"

#include "base/buf.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include "expr/pgvector.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pg_query.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char PREFIX[] = "SELECT 1 FROM t WHERE ";
#define PREFIX_LEN ((int)(sizeof PREFIX - 1))
#define EX_MAX_TEXT (16u << 20)   /* bytes of filter text */

/* Bytes before the user's text in the parsed query: PREFIX_LEN for filter
 * text, 0 while ex_bind_json binds a node of a whole statement (the
 * statement is the text).  Per thread, so bindings on other threads keep
 * their own. */
static _Thread_local int tl_prefix_len = PREFIX_LEN;

/* ------------------------------------------------------------------ */
/* errors with a position                                               */

hs_status ex_err_at(hs_error *err, hs_status code, const char *text, int loc, const char *fmt, ...)
{
    if (!err || err->code != HS_OK)
        return code;
    char msg[256]; /* + position, quoted line and caret: fits HS_ERROR_MSG_MAX */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (loc < 0 || !text)
        return hs_err_set(err, code, "%s", msg);
    size_t len = strlen(text), at = (size_t)loc;
    if (at > len)
        at = len;
    size_t ch = 1;
    for (size_t i = 0; i < at; i++)
        ch += ((unsigned char)text[i] & 0xC0) != 0x80;
    size_t ls = at, le = at;
    while (ls > 0 && text[ls - 1] != '\n')
        ls--;
    while (le < len && text[le] != '\n')
        le++;
    bool cut_l = false, cut_r = false;
    if (at - ls > 60) {
        ls = at - 60;
        while (ls < at && ((unsigned char)text[ls] & 0xC0) == 0x80)
            ls++;
        cut_l = true;
    }
    if (le - at > 40) {
        le = at + 40;
        while (le > at && ((unsigned char)text[le] & 0xC0) == 0x80)
            le--;
        cut_r = true;
    }
    char line[160], caret[80];
    size_t k = 0, col = 0;
    line[k++] = ' ';
    line[k++] = ' ';
    if (cut_l) {
        memcpy(line + k, "...", 3);
        k += 3;
        col += 3;
    }
    for (size_t i = ls; i < le && k < sizeof line - 5; i++) {
        unsigned char c = (unsigned char)text[i];
        line[k++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
        if (i < at && (c & 0xC0) != 0x80)
            col++;
    }
    if (cut_r && k < sizeof line - 4) {
        memcpy(line + k, "...", 3);
        k += 3;
    }
    line[k] = '\0';
    size_t c2 = 0;
    caret[c2++] = ' ';
    caret[c2++] = ' ';
    for (size_t i = 0; i < col && c2 < sizeof caret - 2; i++)
        caret[c2++] = ' ';
    caret[c2++] = '^';
    caret[c2] = '\0';
    return hs_err_set(err, code, "%s at character %zu\n%s\n%s", msg, ch, line, caret);
}

/* ------------------------------------------------------------------ */
/* binder state (ex_binder: expr_int.h) and node construction           */

hs_status exb_nomem(ex_binder *b) { return hs_err_nomem(b->err, 0); }

int exb_loc(const json_t *body)
{
    json_t *l = json_object_get(body, "location");
    if (!json_is_integer(l))
        return -1;
    json_int_t v = json_integer_value(l);
    return v >= tl_prefix_len && v <= (json_int_t)INT32_MAX ? (int)(v - tl_prefix_len) : -1;
}

hs_status exb_err(ex_binder *b, hs_status code, int loc, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ex_err_at(b->err, code, b->e->text, loc, "%s", msg);
}

ex_ty exb_ty(ex_t t)
{
    ex_ty r;
    memset(&r, 0, sizeof r);
    r.t = t;
    if (t == EX_T_INT || t == EX_T_FLOAT)
        r.bits = 64;
    if (t == EX_T_TS || t == EX_T_TIME)
        r.unit = HS_UNIT_MICRO;
    if (t == EX_T_DEC)
        r.prec = 38;
    return r;
}

ex_node *exb_mk(ex_binder *b, ex_kind k, ex_ty t, int loc, int n_args)
{
    ex_node *n = hs_arena_calloc(&b->e->arena, 1, sizeof *n);
    if (!n)
        return NULL;
    n->kind = k;
    n->type = t;
    n->loc = loc;
    n->esc = -1;
    n->field_id = -1;
    n->n_args = n_args;
    if (n_args > 0) {
        n->args = hs_arena_calloc(&b->e->arena, (size_t)n_args, sizeof *n->args);
        if (!n->args)
            return NULL;
    }
    return n;
}

hs_status exb_mk_fn(ex_binder *b, ex_fn f, ex_ty t, int aux, ex_node **a, int n, int loc,
                    ex_node **out)
{
    ex_node *x = exb_mk(b, EX_FUNC, t, loc, n);
    if (!x)
        return exb_nomem(b);
    x->op = (int)f;
    x->aux = aux;
    for (int i = 0; i < n; i++)
        x->args[i] = a[i];
    *out = x;
    return exb_fold(b, out, false);
}

ex_node *exb_mk_const(ex_binder *b, ex_ty t, int loc)
{
    return exb_mk(b, EX_CONST, t, loc, 0);
}

static ex_node *mk_null(ex_binder *b, ex_ty t, int loc)
{
    ex_node *n = exb_mk_const(b, t, loc);
    if (n)
        n->val.null = true;
    return n;
}

const char *exb_tname(const ex_ty *t, char *buf) { return ex_type_name(t, buf, 48); }

/* ------------------------------------------------------------------ */
/* folding                                                             */

/* Replaces *np by a constant when all its arguments are constants.  When
 * `strict`, an evaluation error is the binding error (literal conversions:
 * '2024-13-01' next to a date column); otherwise the node is kept and the
 * error, if the row is ever evaluated, happens then. */
hs_status exb_fold(ex_binder *b, ex_node **np, bool strict)
{
    ex_node *n = *np;
    if (n->kind == EX_CONST || n->kind == EX_COL)
        return HS_OK;
    for (int i = 0; i < n->n_args; i++)
        if (!exb_is_const(n->args[i]))
            return HS_OK;
    hs_error local = {0};
    ex_value v = {0};   /* every field defined, whatever ex_fold sets (NULL: only the flag) */
    hs_status st = ex_fold(b->e, n, &b->e->arena, &v, strict ? b->err : &local);
    if (st == HS_NOMEM)
        return hs_err_nomem(b->err, 0);
    if (st != HS_OK)
        return strict ? st : HS_OK;
    ex_node *c = exb_mk_const(b, n->type, n->loc);
    if (!c)
        return exb_nomem(b);
    c->val = v;
    *np = c;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* types and coercion                                                  */

int exb_int_digits(const ex_ty *t)
{
    if (t->t == EX_T_INT)
        return t->bits <= 8 ? 3 : t->bits <= 16 ? 5 : t->bits <= 32 ? 10 : 19;
    if (t->t == EX_T_DEC)
        return t->prec - t->scale;
    return 0;
}

ex_ty exb_dec_type(int int_dig, int scale)
{
    ex_ty r = exb_ty(EX_T_DEC);
    if (scale > 38)
        scale = 38;
    int p = int_dig + scale;
    r.prec = (int8_t)(p > 38 ? 38 : p < 1 ? 1 : p);
    r.scale = (int8_t)scale;
    return r;
}

/* The common type of a and b for CASE, COALESCE, IN, comparisons.  False
 * when there is none. */
static bool common_type(const ex_ty *a, const ex_ty *b, ex_ty *out)
{
    if (a->t == EX_T_NULL) {
        *out = b->t == EX_T_NULL ? exb_ty(EX_T_NULL) : *b;
        return b->t != EX_T_OTHER;
    }
    if (b->t == EX_T_NULL || (b->t == EX_T_UNKNOWN && a->t != EX_T_OTHER)) {
        *out = a->t == EX_T_UNKNOWN ? exb_ty(EX_T_STR) : *a;
        return a->t != EX_T_OTHER;
    }
    if (a->t == EX_T_UNKNOWN) {
        *out = *b;
        return b->t != EX_T_OTHER;
    }
    if (a->t == b->t) {
        *out = *a;
        switch (a->t) {
        case EX_T_INT: case EX_T_FLOAT:
            out->bits = a->bits > b->bits ? a->bits : b->bits;
            return true;
        case EX_T_DEC: {
            int s = a->scale > b->scale ? a->scale : b->scale;
            int d = exb_int_digits(a) > exb_int_digits(b) ? exb_int_digits(a) : exb_int_digits(b);
            *out = exb_dec_type(d, s);
            return true;
        }
        case EX_T_TS: case EX_T_TIME:
            out->unit = a->unit > b->unit ? a->unit : b->unit;
            out->tz = a->tz || b->tz;
            return true;
        case EX_T_BIN:
            out->uuid = a->uuid && b->uuid;
            return true;
        case EX_T_ARRAY:   /* arrays of one kind (CASE, COALESCE, IN, ...; lift_arrays) */
            return a->elem == b->elem;
        case EX_T_OTHER:
            return false;
        default:
            return true;
        }
    }
    if (exb_is_num(a->t) && exb_is_num(b->t)) {
        if (a->t == EX_T_FLOAT || b->t == EX_T_FLOAT) {
            *out = exb_ty(EX_T_FLOAT);
            return true;
        }
        int d = exb_int_digits(a) > exb_int_digits(b) ? exb_int_digits(a) : exb_int_digits(b);
        *out = exb_dec_type(d, a->t == EX_T_DEC ? a->scale : b->scale);
        return true;
    }
    if ((a->t == EX_T_DATE && b->t == EX_T_TS) || (a->t == EX_T_TS && b->t == EX_T_DATE)) {
        *out = a->t == EX_T_TS ? *a : *b;
        return true;
    }
    return false;
}

/* Explicit casts the kernels implement (expr_eval.c cast_rows). */
static bool castable(const ex_ty *from, const ex_ty *to)
{
    ex_t f = from->t, t = to->t;
    if (f == EX_T_OTHER || t == EX_T_OTHER || t == EX_T_UNKNOWN)
        return false;
    if (f == EX_T_ARRAY || t == EX_T_ARRAY) /* the arrays of pgvector's casts */
        return f == EX_T_NULL || f == EX_T_UNKNOWN || f == EX_T_STR || t == EX_T_STR ||
               (f == EX_T_ARRAY && t == EX_T_ARRAY) ||
               (f == EX_T_ARRAY && t != EX_T_BIT && ex_is_pv(t) && from->elem != PV_E_TEXT &&
                from->elem != PV_E_INT8) ||
               ((f == EX_T_VEC || f == EX_T_HALFVEC) && to->elem == PV_E_FLOAT4);
    if (ex_is_pv(f) || ex_is_pv(t)) /* pgvector's casts; text both ways (I/O casts) */
        return f == EX_T_NULL || f == EX_T_UNKNOWN || f == EX_T_STR || t == EX_T_STR || f == t ||
               (ex_is_pv(f) && ex_is_pv(t) && f != EX_T_BIT && t != EX_T_BIT);
    if (f == EX_T_NULL || f == EX_T_UNKNOWN || f == EX_T_STR || t == EX_T_STR || f == t)
        return true;
    if (exb_is_num(f) && exb_is_num(t))
        return true;
    if ((f == EX_T_BOOL && t == EX_T_INT) || (f == EX_T_INT && t == EX_T_BOOL))
        return true;
    if ((f == EX_T_DATE && t == EX_T_TS) || (f == EX_T_TS && (t == EX_T_DATE || t == EX_T_TIME)))
        return true;
    if (f == EX_T_BIN && t == EX_T_STR)
        return true;
    if (t == EX_T_INTERVAL)
        return f == EX_T_INTERVAL || f == EX_T_STR || f == EX_T_UNKNOWN || f == EX_T_NULL;
    return false;
}

/* Wraps n in a cast to t (folded when n is constant). */
static bool same_repr(const ex_ty *a, const ex_ty *b);

hs_status exb_cast_to(ex_binder *b, ex_node **np, ex_ty t, bool strict)
{
    ex_node *n = *np;
    if (same_repr(&n->type, &t) && n->type.uuid == t.uuid)
        return HS_OK;
    if (n->kind == EX_CONST && n->val.null) {
        ex_node *c = mk_null(b, t, n->loc);
        if (!c)
            return exb_nomem(b);
        *np = c;
        return HS_OK;
    }
    ex_node *c = exb_mk(b, EX_CAST, t, n->loc, 1);
    if (!c)
        return exb_nomem(b);
    c->args[0] = n;
    *np = c;
    return exb_fold(b, np, strict || n->type.t == EX_T_UNKNOWN);
}

/* Same types for evaluation purposes (bits and precision do not matter). */
static bool same_repr(const ex_ty *a, const ex_ty *b)
{
    if (a->t != b->t)
        return false;
    if (a->t == EX_T_DEC)
        return a->scale == b->scale;
    if (a->t == EX_T_TS || a->t == EX_T_TIME)
        return a->unit == b->unit;
    if (ex_is_pv(a->t))
        return a->dim == b->dim || b->dim == 0;
    if (a->t == EX_T_ARRAY)
        return a->elem == b->elem;
    return true;
}

/* Converts *np to type t implicitly: NULL and unknown literals become t,
 * widening numeric, date and time conversions become casts. */
hs_status exb_coerce(ex_binder *b, ex_node **np, ex_ty t)
{
    if (same_repr(&(*np)->type, &t))
        return HS_OK; /* widths, precision and tz are not converted implicitly */
    return exb_cast_to(b, np, t, false);
}

static const char *op_text(int op)
{
    switch (op) {
    case PR_EQ: return "=";
    case PR_NE: return "<>";
    case PR_LT: return "<";
    case PR_LE: return "<=";
    case PR_GT: return ">";
    case PR_GE: return ">=";
    }
    return "?";
}

static ex_cmode cmode_of(const ex_ty *t)
{
    switch (t->t) {
    case EX_T_FLOAT: return EX_CM_F64;
    case EX_T_DEC: return EX_CM_DEC;
    case EX_T_STR: case EX_T_BIN: case EX_T_UNKNOWN: return EX_CM_BYTES;
    case EX_T_BOOL: return EX_CM_BOOL;
    case EX_T_VEC: case EX_T_HALFVEC: case EX_T_SPARSEVEC: case EX_T_BIT: return EX_CM_PV;
    case EX_T_ARRAY: return EX_CM_PV;
    case EX_T_INTERVAL: return EX_CM_IV;
    default: return EX_CM_I64;
    }
}

/* Brings a value to compare type t: decimals keep their own scale (the DEC
 * compare mode aligns scales exactly), integers become scale-0 decimals. */
static hs_status coerce_cmp(ex_binder *b, ex_node **np, const ex_ty *t)
{
    if (t->t == EX_T_DEC) {
        if ((*np)->type.t == EX_T_DEC)
            return HS_OK;
        if ((*np)->type.t == EX_T_INT)
            return exb_cast_to(b, np, exb_dec_type(exb_int_digits(&(*np)->type), 0), false);
    }
    return exb_coerce(b, np, *t);
}

/* Prepares l and r for comparison; sets *mode. */
static hs_status unify_cmp(ex_binder *b, ex_node **l, ex_node **r, int loc, const char *opname,
                           ex_cmode *mode)
{
    ex_ty *a = &(*l)->type, *c = &(*r)->type;
    /* a double next to an integer constant that it holds exactly compares as
     * doubles (the fast path); other mixes compare exactly, mixed */
    for (int side = 0; side < 2; side++) {
        ex_node **k = side ? l : r, *other = side ? *r : *l;
        if (other->type.t == EX_T_FLOAT && exb_is_const(*k) && (*k)->type.t == EX_T_INT && !(*k)->val.null) {
            int64_t v = (*k)->val.i;
            if (v >= -(INT64_C(1) << 53) && v <= (INT64_C(1) << 53))
                HS_TRY(exb_cast_to(b, k, exb_ty(EX_T_FLOAT), true));
        }
    }
    a = &(*l)->type;
    c = &(*r)->type;
    if (a->t == EX_T_INT && c->t == EX_T_FLOAT) {
        *mode = EX_CM_I64_F64;
        return HS_OK;
    }
    if (a->t == EX_T_FLOAT && c->t == EX_T_INT) {
        *mode = EX_CM_F64_I64;
        return HS_OK;
    }
    ex_ty t;
    char b1[48], b2[48];
    if (!common_type(a, c, &t))
        return exb_err(b, HS_INVALID, loc, "operator does not exist: %s %s %s", exb_tname(a, b1), opname,
                      exb_tname(c, b2));
    if (t.t == EX_T_NULL)
        t = exb_ty(EX_T_BOOL);
    HS_TRY(coerce_cmp(b, l, &t));
    HS_TRY(coerce_cmp(b, r, &t));
    *mode = cmode_of(&t);
    return HS_OK;
}

/* Checks that n is boolean (NULL and 'true' literals are made so). */
hs_status exb_need_bool(ex_binder *b, ex_node **np, const char *what)
{
    ex_t t = (*np)->type.t;
    if (t == EX_T_BOOL)
        return HS_OK;
    if (t == EX_T_NULL || t == EX_T_UNKNOWN)
        return exb_cast_to(b, np, exb_ty(EX_T_BOOL), true);
    char buf[48];
    return exb_err(b, HS_INVALID, (*np)->loc, "argument of %s must be type boolean, not type %s", what,
                  exb_tname(&(*np)->type, buf));
}

/* ------------------------------------------------------------------ */
/* JSON access                                                         */

/* A parse node is {"Kind": {...}}: the kind name and its body. */
bool exb_node_of(json_t *j, const char **kind, json_t **body)
{
    if (!json_is_object(j) || json_object_size(j) != 1)
        return false;
    void *it = json_object_iter(j);
    *kind = json_object_iter_key(it);
    *body = json_object_iter_value(it);
    return json_is_object(*body);
}

const char *exb_jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* {"String": {"sval": "x"}} -> "x" */
const char *exb_string_node(json_t *j, size_t *len)
{
    const char *k;
    json_t *body;
    if (!exb_node_of(j, &k, &body) || strcmp(k, "String") != 0)
        return NULL;
    json_t *v = json_object_get(body, "sval");
    if (!v) {
        *len = 0;
        return "";
    }
    if (!json_is_string(v))
        return NULL;
    *len = json_string_length(v);
    return json_string_value(v);
}

/* The last name of a possibly "pg_catalog."-qualified name list. */
const char *exb_last_name(json_t *list, bool *qualified_other)
{
    *qualified_other = false;
    size_t n = json_array_size(list), len;
    if (n == 0)
        return NULL;
    const char *last = exb_string_node(json_array_get(list, n - 1), &len);
    if (n == 2) {
        const char *q = exb_string_node(json_array_get(list, 0), &len);
        if (!q || strcmp(q, "pg_catalog") != 0)
            *qualified_other = true;
    } else if (n > 2) {
        *qualified_other = true;
    }
    return last;
}

/* The first location >= the prefix anywhere inside j (for clauses that
 * carry none of their own). */
static int first_loc(json_t *j, int depth)
{
    if (depth > 64)
        return -1;
    if (json_is_object(j)) {
        int l = exb_loc(j);
        if (l >= 0)
            return l;
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            l = first_loc(v, depth + 1);
            if (l >= 0)
                return l;
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) {
            int l = first_loc(v, depth + 1);
            if (l >= 0)
                return l;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* constants                                                           */

/* Reads back an integer constant whose value the JSON lost (see top):
 * '-' signs, '(' and comments before the digits. */
static bool scan_int(ex_binder *b, int loc, int64_t *out)
{
    size_t i = (size_t)loc + (size_t)tl_prefix_len, n = b->query_len;
    const char *q = b->query;
    bool neg = false;
    while (i < n) {
        if (isspace((unsigned char)q[i]) || q[i] == '(') {
            i++;
        } else if (q[i] == '-' && i + 1 < n && q[i + 1] == '-') {
            while (i < n && q[i] != '\n')
                i++;
        } else if (q[i] == '/' && i + 1 < n && q[i + 1] == '*') {
            int d = 0;
            while (i < n) {
                if (q[i] == '/' && i + 1 < n && q[i + 1] == '*') {
                    d++;
                    i += 2;
                } else if (q[i] == '*' && i + 1 < n && q[i + 1] == '/') {
                    i += 2;
                    if (--d == 0)
                        break;
                } else {
                    i++;
                }
            }
        } else if (q[i] == '-') {
            neg = !neg;
            i++;
        } else {
            break;
        }
    }
    int64_t v = 0;
    int nd = 0;
    while (i < n && isdigit((unsigned char)q[i]) && nd < 12) {
        v = v * 10 + (q[i++] - '0');
        nd++;
    }
    if (nd == 0 || nd >= 12)
        return false;
    *out = neg ? -v : v;
    return true;
}

/* Numeric text (digits, '.', exponent) -> exact decimal when it fits 38
 * digits, else false. */
static bool parse_numeric(const char *s, __int128 *unscaled, int *scale, int *digits)
{
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    __int128 v = 0;
    int nd = 0, sc = 0;
    bool dot = false, any = false;
    for (; *p; p++) {
        if (*p == '.' && !dot) {
            dot = true;
            continue;
        }
        if (!isdigit((unsigned char)*p))
            break;
        any = true;
        if (v == 0 && *p == '0') {
            if (dot)
                sc++;
            continue;
        }
        if (nd >= 38)
            return false;
        v = v * 10 + (*p - '0');
        nd++;
        if (dot)
            sc++;
    }
    if (!any)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        errno = 0;
        char *end;
        long ex = strtol(p, &end, 10);
        if (end == p || *end || errno || ex > 100 || ex < -100)
            return false;
        sc -= (int)ex;
        p = end;
    }
    if (*p)
        return false;
    while (sc < 0) {
        if (nd >= 38)
            return false;
        v *= 10;
        sc++;
        if (v != 0)
            nd++;
    }
    if (sc > 38)
        return false;
    *unscaled = neg ? -v : v;
    *scale = sc;
    *digits = nd > sc ? nd : sc;
    return true;
}


static hs_status bind_const(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    json_t *v;
    if (json_is_true(json_object_get(body, "isnull")))
        return (*out = mk_null(b, exb_ty(EX_T_NULL), loc)) ? HS_OK : exb_nomem(b);
    if ((v = json_object_get(body, "ival"))) {
        json_t *iv = json_object_get(v, "ival");
        int64_t x = 0;
        if (json_is_integer(iv))
            x = json_integer_value(iv);
        else if (loc >= 0 && !scan_int(b, loc, &x))
            return exb_err(b, HS_INTERNAL, loc, "cannot read the integer constant");
        ex_ty t = exb_ty(EX_T_INT);
        t.bits = x == (int32_t)x ? 32 : 64;   /* PostgreSQL: integer, else bigint */
        ex_node *n = exb_mk_const(b, t, loc);
        if (!n)
            return exb_nomem(b);
        n->val.i = x;
        *out = n;
        return HS_OK;
    }
    if ((v = json_object_get(body, "fval"))) {
        const char *s = exb_jstr(v, "fval");
        if (!s)
            return exb_err(b, HS_INTERNAL, loc, "malformed numeric constant");
        ex_node *n;
        if (!strpbrk(s, ".eE")) {
            errno = 0;
            char *end;
            long long x = strtoll(s, &end, 10);
            if (!*end && errno == 0) {
                if (!(n = exb_mk_const(b, exb_ty(EX_T_INT), loc)))
                    return exb_nomem(b);
                n->val.i = x;
                *out = n;
                return HS_OK;
            }
        }
        __int128 d;
        int sc, nd;
        if (parse_numeric(s, &d, &sc, &nd)) {
            if (!(n = exb_mk_const(b, exb_dec_type(nd - sc, sc), loc)))
                return exb_nomem(b);
            n->val.d = d;
        } else {
            char *end;
            double f = hs_strtod(s, &end);
            if (*end)
                return exb_err(b, HS_INVALID, loc, "invalid number \"%s\"", s);
            if (!(n = exb_mk_const(b, exb_ty(EX_T_FLOAT), loc)))
                return exb_nomem(b);
            n->val.f = f;
        }
        *out = n;
        return HS_OK;
    }
    if ((v = json_object_get(body, "sval"))) {
        json_t *sv = json_object_get(v, "sval");
        size_t len = json_is_string(sv) ? json_string_length(sv) : 0;
        const char *s = json_is_string(sv) ? json_string_value(sv) : "";
        ex_node *n = exb_mk_const(b, exb_ty(EX_T_UNKNOWN), loc);
        char *copy = hs_arena_strndup(&b->e->arena, s, len);
        if (!n || !copy)
            return exb_nomem(b);
        n->val.s.p = (const uint8_t *)copy;
        n->val.s.n = len;
        *out = n;
        return HS_OK;
    }
    if ((v = json_object_get(body, "boolval"))) {
        ex_node *n = exb_mk_const(b, exb_ty(EX_T_BOOL), loc);
        if (!n)
            return exb_nomem(b);
        n->val.i = json_is_true(json_object_get(v, "boolval"));
        *out = n;
        return HS_OK;
    }
    if ((v = json_object_get(body, "bsval")))
        return exb_pv_bitconst(b, v, loc, out);
    return exb_err(b, HS_UNSUPPORTED, loc, "unsupported constant");
}

/* ------------------------------------------------------------------ */
/* columns                                                             */

/* Child of a struct by name: exact match first, then the unique
 * case-insensitive match.  *ambiguous when several match that way. */
static const hs_field *find_child(const hs_field *parent, const char *name, size_t len,
                                  bool *ambiguous)
{
    *ambiguous = false;
    if (parent->type != HS_TYPE_STRUCT)
        return NULL;
    for (int i = 0; i < parent->n_children; i++) {
        const char *nm = parent->children[i].name;
        if (nm && strlen(nm) == len && memcmp(nm, name, len) == 0)
            return &parent->children[i];
    }
    const hs_field *hit = NULL;
    for (int i = 0; i < parent->n_children; i++) {
        const char *nm = parent->children[i].name;
        if (nm && strlen(nm) == len && strncasecmp(nm, name, len) == 0) {
            if (hit) {
                *ambiguous = true;
                return NULL;
            }
            hit = &parent->children[i];
        }
    }
    return hit;
}

static ex_ty type_of_field(const hs_field *f) { return ex_type_of_field(f); }

static hs_status bind_scope_column(ex_binder *b, json_t *body, ex_node **out);
static hs_status scope_col(ex_binder *b, int idx, int loc, ex_node **out);

static hs_status bind_column(ex_binder *b, json_t *body, ex_node **out)
{
    if (b->scope)
        return bind_scope_column(b, body, out);
    int loc = exb_loc(body);
    json_t *fields = json_object_get(body, "fields");
    size_t n = json_array_size(fields);
    if (n == 0 || n > 8)
        return exb_err(b, HS_UNSUPPORTED, loc, "unsupported column reference");
    const char *names[8];
    size_t lens[8];
    hs_buf full = {0};
    hs_status st = HS_OK;
    for (size_t i = 0; i < n; i++) {
        const char *k;
        json_t *nb;
        if (exb_node_of(json_array_get(fields, i), &k, &nb) && strcmp(k, "A_Star") == 0) {
            hs_buf_free(&full);
            return exb_err(b, HS_UNSUPPORTED, loc, "'*' is not supported in expressions");
        }
        names[i] = exb_string_node(json_array_get(fields, i), &lens[i]);
        if (!names[i]) {
            hs_buf_free(&full);
            return exb_err(b, HS_UNSUPPORTED, loc, "unsupported column reference");
        }
        if ((i > 0 && (st = hs_buf_append_byte(&full, '.')) != HS_OK) ||
            (st = hs_buf_append(&full, names[i], lens[i])) != HS_OK) {
            hs_buf_free(&full);
            return exb_nomem(b);
        }
    }
    const char *fullname = hs_buf_cstr(&full);
    /* struct path */
    const hs_field *f = b->e->schema;
    const hs_field *chain[8];
    bool amb = false;
    size_t depth = 0;
    for (; depth < n && f; depth++) {
        f = find_child(f, names[depth], lens[depth], &amb);
        chain[depth] = f;
    }
    if (!f && n > 1) {
        /* a top-level column whose name contains dots */
        bool amb2;
        const hs_field *g = find_child(b->e->schema, fullname, full.len, &amb2);
        if (g) {
            f = g;
            chain[0] = g;
            depth = 1;
            amb = false;
        }
    }
    if (!f) {
        st = amb ? exb_err(b, HS_INVALID, loc, "column reference \"%s\" is ambiguous", fullname)
                 : exb_err(b, HS_NOT_FOUND, loc, "unknown column \"%s\"", fullname);
        hs_buf_free(&full);
        return st;
    }
    ex_node *c = exb_mk(b, EX_COL, type_of_field(f), loc, 0);
    char *nm = hs_arena_strndup(&b->e->arena, fullname, full.len);
    const char **path = hs_arena_calloc(&b->e->arena, depth, sizeof *path);
    hs_buf_free(&full);
    if (!c || !nm || !path)
        return exb_nomem(b);
    for (size_t i = 0; i < depth; i++)
        path[i] = chain[i]->name;
    c->field = f;
    c->field_id = f->field_id;
    c->name = nm;
    c->path = path;
    c->path_len = (int)depth;
    c->slot = b->e->n_slots++;
    *out = c;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* type names (casts)                                                  */


static hs_status bind_typename(ex_binder *b, json_t *tn, ex_ty *out)
{
    int loc = exb_loc(tn);
    bool other;
    if (json_array_size(json_object_get(tn, "arrayBounds")) > 0)
        return exb_pv_arraytype(b, tn, loc, out);
    const char *nm = exb_last_name(json_object_get(tn, "names"), &other);
    if (!nm || other)
        return exb_err(b, HS_UNSUPPORTED, loc, "unsupported type name");
    json_t *mods = json_object_get(tn, "typmods");
    size_t n_mods = json_array_size(mods);
    int64_t mv[2] = {-1, -1};
    for (size_t i = 0; i < n_mods && i < 2; i++) {
        const char *k;
        json_t *body;
        if (!exb_node_of(json_array_get(mods, i), &k, &body) || strcmp(k, "A_Const") != 0)
            return exb_err(b, HS_UNSUPPORTED, loc, "type modifiers must be integer constants");
        json_t *iv = json_object_get(body, "ival");
        if (!iv)
            return exb_err(b, HS_UNSUPPORTED, loc, "type modifiers must be integer constants");
        mv[i] = json_is_integer(json_object_get(iv, "ival"))
                    ? json_integer_value(json_object_get(iv, "ival")) : 0;
    }
    if (exb_pv_typename(nm))
        return exb_pv_typmod(b, nm, n_mods, mv, loc, out);
    static const struct { const char *name; ex_t t; int bits; int unit; bool tz; } names[] = {
        {"bool", EX_T_BOOL, 0, 0, false}, {"boolean", EX_T_BOOL, 0, 0, false},
        {"int2", EX_T_INT, 16, 0, false}, {"smallint", EX_T_INT, 16, 0, false},
        {"int4", EX_T_INT, 32, 0, false}, {"int", EX_T_INT, 32, 0, false},
        {"integer", EX_T_INT, 32, 0, false}, {"int8", EX_T_INT, 64, 0, false},
        {"bigint", EX_T_INT, 64, 0, false}, {"float4", EX_T_FLOAT, 32, 0, false},
        {"real", EX_T_FLOAT, 32, 0, false}, {"float8", EX_T_FLOAT, 64, 0, false},
        {"double", EX_T_FLOAT, 64, 0, false}, {"float", EX_T_FLOAT, 64, 0, false},
        {"numeric", EX_T_DEC, 0, 0, false}, {"decimal", EX_T_DEC, 0, 0, false},
        {"text", EX_T_STR, 0, 0, false}, {"varchar", EX_T_STR, 0, 0, false},
        {"bpchar", EX_T_STR, 0, 0, false}, {"char", EX_T_STR, 0, 0, false},
        {"string", EX_T_STR, 0, 0, false}, {"bytea", EX_T_BIN, 0, 0, false},
        {"blob", EX_T_BIN, 0, 0, false}, {"date", EX_T_DATE, 0, 0, false},
        {"timestamp", EX_T_TS, 0, HS_UNIT_MICRO, false},
        {"timestamptz", EX_T_TS, 0, HS_UNIT_MICRO, true},
        {"timestamp_s", EX_T_TS, 0, HS_UNIT_SECOND, false},
        {"timestamp_ms", EX_T_TS, 0, HS_UNIT_MILLI, false},
        {"timestamp_ns", EX_T_TS, 0, HS_UNIT_NANO, false},
        {"time", EX_T_TIME, 0, HS_UNIT_MICRO, false}, {"uuid", EX_T_BIN, 0, 0, false},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(nm, names[i].name) != 0)
            continue;
        ex_ty t = exb_ty(names[i].t);
        if (names[i].bits)
            t.bits = (uint8_t)names[i].bits;
        t.unit = (uint8_t)names[i].unit;
        t.tz = names[i].tz;
        t.uuid = strcasecmp(nm, "uuid") == 0;
        if (t.t == EX_T_DEC && n_mods == 0) {
            t.prec = 0; /* unconstrained: bind_cast picks the scale (unconstrained_numeric) */
        } else if (t.t == EX_T_DEC) {
            int64_t p = mv[0], s = n_mods >= 2 ? mv[1] : 0;
            if (p < 1 || p > 38 || s < 0 || s > p)
                return exb_err(b, HS_INVALID, loc, "decimal precision must be 1..38 and scale 0..precision");
            t.prec = (int8_t)p;
            t.scale = (int8_t)s;
        }
        *out = t;
        return HS_OK;
    }
    if (strcasecmp(nm, "interval") == 0) {
        ex_ty t = exb_ty(EX_T_INTERVAL);
        /* interval 'n' day: the field qualifier (a mask; a second modifier
         * is the seconds' precision) */
        t.dim = n_mods >= 1 && mv[0] != 0x7FFF ? (int32_t)mv[0] : 0;
        *out = t;
        return HS_OK;
    }
    return exb_err(b, HS_UNSUPPORTED, loc, "unsupported type \"%s\"", nm);
}

/* ------------------------------------------------------------------ */
/* expressions                                                         */


hs_status exb_list(ex_binder *b, json_t *arr, ex_node ***out, int *n_out)
{
    size_t n = json_array_size(arr);
    if (n > 1000000)
        return exb_err(b, HS_INVALID, -1, "list too long");
    ex_node **a = hs_arena_calloc(&b->e->arena, n ? n : 1, sizeof *a);
    if (!a)
        return exb_nomem(b);
    for (size_t i = 0; i < n; i++)
        HS_TRY(exb_bind(b, json_array_get(arr, i), &a[i]));
    *out = a;
    *n_out = (int)n;
    return HS_OK;
}

/* date <op> timestamp-constant-at-midnight compares as dates (the date
 * is that midnight), so the column is not cast row by row and the bound
 * stays a date for pruning: TPC-H's date '...' - interval '90' day folds
 * to a timestamp. */
static void date_vs_midnight(ex_binder *b, ex_node *d, ex_node **c)
{
    ex_node *k = *c;
    if (d->type.t != EX_T_DATE || k->kind != EX_CONST || k->type.t != EX_T_TS || k->type.tz ||
        k->val.null)
        return;
    int64_t per_day = 86400 * ex_unit_per_sec(k->type.unit);
    if (k->val.i % per_day != 0)
        return;
    ex_node *n = exb_mk(b, EX_CONST, exb_ty(EX_T_DATE), k->loc, 0);
    if (!n)
        return;
    n->val.i = k->val.i / per_day;
    *c = n;
}

static hs_status make_cmp(ex_binder *b, int op, ex_node *l, ex_node *r, int loc, ex_node **out)
{
    ex_node *n = exb_mk(b, EX_CMP, exb_ty(EX_T_BOOL), loc, 2);
    if (!n)
        return exb_nomem(b);
    date_vs_midnight(b, l, &r);
    date_vs_midnight(b, r, &l);
    HS_TRY(unify_cmp(b, &l, &r, loc, op_text(op), &n->cmode));
    n->op = op;
    n->args[0] = l;
    n->args[1] = r;
    *out = n;
    return exb_fold(b, out, false);
}

static hs_status make_not(ex_binder *b, ex_node *x, int loc, ex_node **out)
{
    ex_node *n = exb_mk(b, EX_NOT, exb_ty(EX_T_BOOL), loc, 1);
    if (!n)
        return exb_nomem(b);
    n->args[0] = x;
    *out = n;
    return exb_fold(b, out, false);
}

int exb_parse_cmp_op(const char *s)
{
    if (!strcmp(s, "=") || !strcmp(s, "=="))
        return PR_EQ;
    if (!strcmp(s, "<>") || !strcmp(s, "!="))
        return PR_NE;
    if (!strcmp(s, "<"))
        return PR_LT;
    if (!strcmp(s, "<="))
        return PR_LE;
    if (!strcmp(s, ">"))
        return PR_GT;
    if (!strcmp(s, ">="))
        return PR_GE;
    return -1;
}

/* Result type of arithmetic l op r, with the operands converted. */
hs_status exb_arith(ex_binder *b, int op, ex_node *l, ex_node *r, int loc, ex_node **out)
{
    char b1[48], b2[48], opname[3] = {(char)op, 0, 0};
    if (op == '|')
        memcpy(opname, "||", 3);
    ex_ty *a = &l->type, *c = &r->type, t;
    if (op == '|') {
        bool bin = (a->t == EX_T_BIN || a->t == EX_T_NULL) && (c->t == EX_T_BIN || c->t == EX_T_NULL) &&
                   !(a->t == EX_T_NULL && c->t == EX_T_NULL);
        t = exb_ty(bin ? EX_T_BIN : EX_T_STR);
        if (a->t == EX_T_OTHER || c->t == EX_T_OTHER)
            return exb_err(b, HS_INVALID, loc, "operator does not exist: %s || %s", exb_tname(a, b1), exb_tname(c, b2));
        HS_TRY(exb_cast_to(b, &l, t, false));
        HS_TRY(exb_cast_to(b, &r, t, false));
        goto build;
    }
    /* an unknown literal takes the other side's type (date + '1': integer) */
    if (a->t == EX_T_UNKNOWN && c->t != EX_T_UNKNOWN) {
        ex_ty want = c->t == EX_T_DATE ? exb_ty(EX_T_INT) : *c;
        if (c->t == EX_T_NULL)
            want = exb_ty(EX_T_INT);
        HS_TRY(exb_cast_to(b, &l, want, true));
        a = &l->type;
    }
    if (c->t == EX_T_UNKNOWN && a->t != EX_T_UNKNOWN) {
        ex_ty want = a->t == EX_T_DATE ? exb_ty(EX_T_INT) : *a;
        if (a->t == EX_T_NULL)
            want = exb_ty(EX_T_INT);
        if (a->t == EX_T_DATE && op == '-')
            want = exb_ty(EX_T_INT);
        HS_TRY(exb_cast_to(b, &r, want, true));
        c = &r->type;
    }
    if (a->t == EX_T_NULL && c->t == EX_T_NULL) {
        HS_TRY(exb_cast_to(b, &l, exb_ty(EX_T_INT), false));
        HS_TRY(exb_cast_to(b, &r, exb_ty(EX_T_INT), false));
        a = &l->type;
        c = &r->type;
    } else if (a->t == EX_T_NULL) {
        HS_TRY(exb_cast_to(b, &l, c->t == EX_T_DATE ? exb_ty(EX_T_INT) : *c, false));
        a = &l->type;
    } else if (c->t == EX_T_NULL) {
        HS_TRY(exb_cast_to(b, &r, a->t == EX_T_DATE ? exb_ty(EX_T_INT) : *a, false));
        c = &r->type;
    }
    /* intervals (expr_interval.c): date/timestamp +- interval is a
     * timestamp (of a date: without time zone), interval +- interval an
     * interval, timestamp - timestamp an interval */
    bool dt_a = a->t == EX_T_DATE || a->t == EX_T_TS, dt_c = c->t == EX_T_DATE || c->t == EX_T_TS;
    if (a->t == EX_T_INTERVAL || c->t == EX_T_INTERVAL ||
        (op == '-' && dt_a && dt_c && (a->t == EX_T_TS || c->t == EX_T_TS))) {
        if (op == '+' && a->t == EX_T_INTERVAL && dt_c) {
            ex_node *tmp = l;
            l = r;
            r = tmp;
            a = &l->type;
            c = &r->type;
            dt_a = true;
        }
        if ((op == '+' || op == '-') && dt_a && c->t == EX_T_INTERVAL) {
            if (a->t == EX_T_DATE)
                HS_TRY(exb_cast_to(b, &l, exb_ty(EX_T_TS), false));
            t = l->type;
            goto build;
        }
        if ((op == '+' || op == '-') && a->t == EX_T_INTERVAL && c->t == EX_T_INTERVAL) {
            t = exb_ty(EX_T_INTERVAL);
            goto build;
        }
        if (op == '-' && dt_a && dt_c && common_type(a, c, &t)) {
            HS_TRY(exb_cast_to(b, &l, t, false));
            HS_TRY(exb_cast_to(b, &r, t, false));
            t = exb_ty(EX_T_INTERVAL);
            goto build;
        }
        if (op == '*' && exb_is_num(a->t) && c->t == EX_T_INTERVAL) {
            ex_node *tmp = l;
            l = r;
            r = tmp;
            a = &l->type;
            c = &r->type;
        }
        if (a->t == EX_T_INTERVAL && exb_is_num(c->t) && (op == '*' || op == '/')) {
            HS_TRY(exb_coerce(b, &r, exb_ty(EX_T_FLOAT)));
            t = exb_ty(EX_T_INTERVAL);
            goto build;
        }
        return exb_err(b, HS_INVALID, loc, "operator does not exist: %s %s %s", exb_tname(a, b1), opname,
                      exb_tname(c, b2));
    }
    /* dates */
    if (a->t == EX_T_DATE || c->t == EX_T_DATE) {
        if (op == '+' && a->t == EX_T_INT && c->t == EX_T_DATE) {
            ex_node *tmp = l;
            l = r;
            r = tmp;
            a = &l->type;
            c = &r->type;
        }
        if ((op == '+' || op == '-') && a->t == EX_T_DATE && c->t == EX_T_INT) {
            t = exb_ty(EX_T_DATE);
            goto build;
        }
        if (op == '-' && a->t == EX_T_DATE && c->t == EX_T_DATE) {
            t = exb_ty(EX_T_INT);
            goto build;
        }
        return exb_err(b, HS_INVALID, loc, "operator does not exist: %s %s %s", exb_tname(a, b1), opname,
                      exb_tname(c, b2));
    }
    if (!exb_is_num(a->t) || !exb_is_num(c->t)) {
        if ((a->t == EX_T_TS || a->t == EX_T_TIME) && (c->t == EX_T_TS || c->t == EX_T_TIME))
            return exb_err(b, HS_UNSUPPORTED, loc, "intervals are not supported (%s %s %s)",
                          exb_tname(a, b1), opname, exb_tname(c, b2));
        return exb_err(b, HS_INVALID, loc, "operator does not exist: %s %s %s", exb_tname(a, b1), opname,
                      exb_tname(c, b2));
    }
    if (a->t == EX_T_FLOAT || c->t == EX_T_FLOAT) {
        t = exb_ty(EX_T_FLOAT);
        HS_TRY(exb_coerce(b, &l, t));
        HS_TRY(exb_coerce(b, &r, t));
    } else if (a->t == EX_T_INT && c->t == EX_T_INT) {
        /* PostgreSQL: smallint, integer or bigint, the wider operand's
         * (overflow is 22003 at run time) */
        t = exb_ty(EX_T_INT);
        t.bits = a->bits > c->bits ? a->bits : c->bits;
        if (t.bits < 16)
            t.bits = 16;
    } else {
        /* decimal arithmetic; integers become scale-0 decimals */
        if (a->t == EX_T_INT)
            HS_TRY(exb_cast_to(b, &l, exb_dec_type(exb_int_digits(a), 0), false));
        if (c->t == EX_T_INT)
            HS_TRY(exb_cast_to(b, &r, exb_dec_type(exb_int_digits(c), 0), false));
        a = &l->type;
        c = &r->type;
        int s1 = a->scale, s2 = c->scale;
        int d1 = exb_int_digits(a), d2 = exb_int_digits(c);
        if (op == '/') {
            /* numeric division (PostgreSQL): each quotient is rounded at
             * the scale PostgreSQL picks for its operands (ex_div_scale);
             * the column holds them at one scale S, at least 20 (PostgreSQL
             * gives 16 to 20 digits for quotients of 1e-4 and more), more
             * when the operands leave room; a quotient that does not fit
             * at S fails with 22003.  Constants get exactly their scale. */
            int S = s1 > s2 ? s1 : s2;
            if (S < 20)
                S = 20;
            int room = 38 - (d1 + s2);
            if (room > 32)
                room = 32;
            if (room > S)
                S = room;
            if (exb_is_const(l) && exb_is_const(r) && !l->val.null && !r->val.null && r->val.d != 0) {
                int rs = ex_div_scale(l->val.d, s1, r->val.d, s2);
                if (rs <= 38)
                    S = rs;
            }
            if (S > 38)
                S = 38;
            t = exb_dec_type(38 - S, S);
        } else if (op == '*') {
            /* PostgreSQL's product has scale s1 + s2; where that leaves no
             * room for the integer digits in 38, the product is rounded
             * to the larger operand scale or what room is left, if more
             * (expr_eval.c ev_arith) */
            int s = s1 + s2;
            if (s + (d1 > d2 ? d1 : d2) > 38) {
                int m = s1 > s2 ? s1 : s2, room = 38 - (d1 > d2 ? d1 : d2);
                s = room > m ? room : m;
            }
            t = exb_dec_type(d1 + d2, s);
        } else {
            int s = s1 > s2 ? s1 : s2;
            t = exb_dec_type((d1 > d2 ? d1 : d2) + (op == '%' ? 0 : 1), s);
        }
    }
build:;
    ex_node *n = exb_mk(b, EX_ARITH, t, loc, 2);
    if (!n)
        return exb_nomem(b);
    n->op = op;
    n->args[0] = l;
    n->args[1] = r;
    *out = n;
    return exb_fold(b, out, false);
}

static hs_status bind_neg(ex_binder *b, ex_node *x, int loc, ex_node **out)
{
    if (x->type.t == EX_T_UNKNOWN || x->type.t == EX_T_NULL)
        HS_TRY(exb_cast_to(b, &x, exb_ty(EX_T_INT), x->type.t == EX_T_UNKNOWN));
    if (!exb_is_num(x->type.t) && x->type.t != EX_T_INTERVAL) {
        char b1[48];
        return exb_err(b, HS_INVALID, loc, "operator does not exist: - %s", exb_tname(&x->type, b1));
    }
    ex_node *n = exb_mk(b, EX_NEG, x->type, loc, 1);
    if (!n)
        return exb_nomem(b);
    if (n->type.t == EX_T_INT && n->type.bits < 16)
        n->type.bits = 16;
    n->args[0] = x;
    *out = n;
    return exb_fold(b, out, false);
}

/* Sorted constant set of IN items (I64, F64, BYTES modes). */
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    bool nx = isnan(x), ny = isnan(y);
    if (nx || ny)
        return nx == ny ? 0 : nx ? 1 : -1;
    return x < y ? -1 : x > y;
}
static int cmp_str(const void *a, const void *b)
{
    const ex_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

static hs_status build_inset(ex_binder *b, ex_node *n)
{
    if (n->cmode != EX_CM_I64 && n->cmode != EX_CM_F64 && n->cmode != EX_CM_BYTES)
        return HS_OK;
    int k = n->n_args - 1;
    if (k < 8 && n->cmode != EX_CM_BYTES)
        return HS_OK; /* a short list of numbers is as fast to scan */
    for (int i = 1; i < n->n_args; i++)
        if (!exb_is_const(n->args[i]))
            return HS_OK;
    ex_inset *s = hs_arena_calloc(&b->e->arena, 1, sizeof *s);
    if (!s)
        return exb_nomem(b);
    size_t esz = n->cmode == EX_CM_I64 ? 8 : n->cmode == EX_CM_F64 ? 8 : sizeof(ex_str);
    void *arr = hs_arena_calloc(&b->e->arena, (size_t)k, esz);
    if (!arr)
        return exb_nomem(b);
    int64_t m = 0;
    for (int i = 1; i < n->n_args; i++) {
        const ex_value *v = &n->args[i]->val;
        if (v->null) {
            s->has_null = true;
            continue;
        }
        if (n->cmode == EX_CM_I64)
            ((int64_t *)arr)[m++] = v->i;
        else if (n->cmode == EX_CM_F64)
            ((double *)arr)[m++] = v->f;
        else
            ((ex_str *)arr)[m++] = v->s;
    }
    qsort(arr, (size_t)m, esz, n->cmode == EX_CM_I64 ? cmp_i64 : n->cmode == EX_CM_F64 ? cmp_f64 : cmp_str);
    s->n = m;
    if (n->cmode == EX_CM_I64)
        s->i = arr;
    else if (n->cmode == EX_CM_F64)
        s->f = arr;
    else
        s->s = arr;
    if (n->cmode == EX_CM_BYTES) {
        s->pre = hs_arena_calloc(&b->e->arena, (size_t)(m ? m : 1), sizeof *s->pre);
        if (!s->pre)
            return exb_nomem(b);
        for (int64_t i = 0; i < m; i++) {
            s->pre[i] = ex_str_pre8(s->s[i].p, s->s[i].n);
            s->lens |= (uint64_t)1 << (s->s[i].n < 63 ? s->s[i].n : 63);
        }
    }
    if (n->cmode == EX_CM_BYTES && m > EX_INSET_LINEAR) {
        /* strings: a hash table (a probe hashes the row once) */
        uint64_t cap = 16;
        while (cap < (uint64_t)m * 2)
            cap *= 2;
        s->slots = hs_arena_calloc(&b->e->arena, (size_t)cap, sizeof *s->slots);
        if (!s->slots)
            return exb_nomem(b);
        s->mask = cap - 1;
        for (int64_t i = 0; i < m; i++) {
            const ex_str *x = &s->s[i];
            if (i > 0 && cmp_str(x, &s->s[i - 1]) == 0)
                continue; /* a duplicate item */
            uint64_t h = ex_str_hash(x->p, x->n) & s->mask;
            while (s->slots[h])
                h = (h + 1) & s->mask;
            s->slots[h] = (uint32_t)(i + 1);
        }
    }
    n->set = s;
    return HS_OK;
}

/* The operands of IN, BETWEEN, CASE, COALESCE and NULLIF: list<string>
 * columns as text[] values; numeric arrays, list columns of numbers and
 * untyped literals beside them as arrays of their common kind. */
static hs_status lift_arrays(ex_binder *b, ex_node **a, int n)
{
    HS_TRY(exb_ta_lift(b, a, n));
    bool any = false, ok;
    for (int i = 0; i < n; i++)
        any |= exb_na_is(a[i]);
    return any ? exb_na_unify(b, a, n, &ok) : HS_OK;
}

static hs_status bind_in(ex_binder *b, json_t *body, bool neg, int loc, ex_node **out)
{
    json_t *rex = json_object_get(body, "rexpr");
    const char *k;
    json_t *rb;
    if (!exb_node_of(rex, &k, &rb) || strcmp(k, "List") != 0)
        return exb_err(b, HS_UNSUPPORTED, loc, "IN needs a list of values (subqueries are not supported)");
    ex_node *lhs;
    HS_TRY(exb_bind(b, json_object_get(body, "lexpr"), &lhs));
    ex_node **items;
    int n_items;
    HS_TRY(exb_list(b, json_object_get(rb, "items"), &items, &n_items));
    if (n_items == 0)
        return exb_err(b, HS_INVALID, loc, "empty IN list");
    {
        ex_node **all = hs_arena_alloc(&b->e->arena, sizeof *all * (size_t)(n_items + 1));
        if (!all)
            return exb_nomem(b);
        all[0] = lhs;
        memcpy(all + 1, items, sizeof *items * (size_t)n_items);
        HS_TRY(lift_arrays(b, all, n_items + 1));
        lhs = all[0];
        memcpy(items, all + 1, sizeof *items * (size_t)n_items);
    }
    ex_ty t = lhs->type;
    char b1[48], b2[48];
    for (int i = 0; i < n_items; i++) {
        ex_ty u;
        if (!common_type(&t, &items[i]->type, &u))
            return exb_err(b, HS_INVALID, items[i]->loc >= 0 ? items[i]->loc : loc,
                          "IN types %s and %s cannot be matched", exb_tname(&t, b1),
                          exb_tname(&items[i]->type, b2));
        t = u;
    }
    if (t.t == EX_T_NULL)
        t = exb_ty(EX_T_BOOL);
    if (t.t == EX_T_UNKNOWN)
        t = exb_ty(EX_T_STR);
    ex_node *n = exb_mk(b, EX_IN, exb_ty(EX_T_BOOL), loc, n_items + 1);
    if (!n)
        return exb_nomem(b);
    HS_TRY(coerce_cmp(b, &lhs, &t));
    n->args[0] = lhs;
    for (int i = 0; i < n_items; i++) {
        HS_TRY(coerce_cmp(b, &items[i], &t));
        n->args[i + 1] = items[i];
    }
    n->neg = neg;
    n->cmode = cmode_of(&t);
    HS_TRY(build_inset(b, n));
    *out = n;
    return exb_fold(b, out, false);
}

/* Brings every node of a[0..n) to their common type for comparing
 * (decimals keep their scales); sets *mode. */
static hs_status unify_many(ex_binder *b, ex_node **a, int n, int loc, const char *what, ex_cmode *mode)
{
    HS_TRY(lift_arrays(b, a, n));
    ex_ty t = a[0]->type;
    char b1[48], b2[48];
    for (int i = 1; i < n; i++) {
        ex_ty u;
        if (!common_type(&t, &a[i]->type, &u))
            return exb_err(b, HS_INVALID, a[i]->loc >= 0 ? a[i]->loc : loc, "%s types %s and %s cannot be matched",
                          what, exb_tname(&t, b1), exb_tname(&a[i]->type, b2));
        t = u;
    }
    if (t.t == EX_T_NULL)
        t = exb_ty(EX_T_BOOL);
    if (t.t == EX_T_UNKNOWN)
        t = exb_ty(EX_T_STR);
    for (int i = 0; i < n; i++)
        HS_TRY(coerce_cmp(b, &a[i], &t));
    *mode = cmode_of(&t);
    return HS_OK;
}

static hs_status bind_between(ex_binder *b, json_t *body, const char *kind, int loc, ex_node **out)
{
    bool neg = strstr(kind, "NOT_") != NULL, sym = strstr(kind, "_SYM") != NULL;
    json_t *rex = json_object_get(body, "rexpr");
    const char *k;
    json_t *rb;
    if (!exb_node_of(rex, &k, &rb) || strcmp(k, "List") != 0 ||
        json_array_size(json_object_get(rb, "items")) != 2)
        return exb_err(b, HS_INVALID, loc, "malformed BETWEEN");
    ex_node *n = exb_mk(b, EX_BETWEEN, exb_ty(EX_T_BOOL), loc, 3);
    if (!n)
        return exb_nomem(b);
    HS_TRY(exb_bind(b, json_object_get(body, "lexpr"), &n->args[0]));
    HS_TRY(exb_bind(b, json_array_get(json_object_get(rb, "items"), 0), &n->args[1]));
    HS_TRY(exb_bind(b, json_array_get(json_object_get(rb, "items"), 1), &n->args[2]));
    HS_TRY(unify_many(b, n->args, 3, loc, "BETWEEN", &n->cmode));
    n->neg = neg;
    n->aux = sym;
    *out = n;
    return exb_fold(b, out, false);
}

static hs_status bind_like(ex_binder *b, json_t *body, const char *opname, bool ci, int loc,
                           ex_node **out)
{
    bool neg = opname[0] == '!';
    ex_node *x;
    HS_TRY(exb_bind(b, json_object_get(body, "lexpr"), &x));
    json_t *rex = json_object_get(body, "rexpr");
    const char *k;
    json_t *rb;
    int esc = '\\';
    ex_node *pat;
    if (exb_node_of(rex, &k, &rb) && strcmp(k, "FuncCall") == 0) {
        bool other;
        const char *fn = exb_last_name(json_object_get(rb, "funcname"), &other);
        json_t *args = json_object_get(rb, "args");
        if (!fn || strcmp(fn, "like_escape") != 0 || json_array_size(args) != 2)
            goto pattern_expr;
        HS_TRY(exb_bind(b, json_array_get(args, 0), &pat));
        ex_node *e;
        HS_TRY(exb_bind(b, json_array_get(args, 1), &e));
        if (!exb_is_const(e) || e->val.null || (e->type.t != EX_T_UNKNOWN && e->type.t != EX_T_STR))
            return exb_err(b, HS_UNSUPPORTED, e->loc, "ESCAPE must be a constant string");
        if (e->val.s.n == 0)
            esc = -1;
        else if (e->val.s.n == 1)
            esc = e->val.s.p[0];
        else
            return exb_err(b, HS_INVALID, e->loc, "invalid escape string (must be one character)");
    } else {
pattern_expr:
        HS_TRY(exb_bind(b, rex, &pat));
    }
    char b1[48];
    if (x->type.t == EX_T_UNKNOWN || x->type.t == EX_T_NULL)
        HS_TRY(exb_cast_to(b, &x, exb_ty(EX_T_STR), false));
    if (pat->type.t == EX_T_UNKNOWN || pat->type.t == EX_T_NULL)
        HS_TRY(exb_cast_to(b, &pat, exb_ty(EX_T_STR), false));
    if (x->type.t != EX_T_STR)
        return exb_err(b, HS_INVALID, loc, "operator does not exist: %s %s string", exb_tname(&x->type, b1),
                      ci ? "ILIKE" : "LIKE");
    if (pat->type.t != EX_T_STR)
        return exb_err(b, HS_INVALID, loc, "operator does not exist: string %s %s", ci ? "ILIKE" : "LIKE",
                      exb_tname(&pat->type, b1));
    ex_node *n = exb_mk(b, EX_LIKE, exb_ty(EX_T_BOOL), loc, 2);
    if (!n)
        return exb_nomem(b);
    n->args[0] = x;
    n->args[1] = pat;
    n->neg = neg;
    n->ci = ci;
    n->esc = esc;
    if (exb_is_const(pat) && !pat->val.null) {
        n->pat = hs_arena_calloc(&b->e->arena, 1, sizeof *n->pat);
        if (!n->pat)
            return exb_nomem(b);
        hs_error le = {0};
        hs_status st = ex_like_compile(pat->val.s.p, pat->val.s.n, esc, ci, &b->e->arena, n->pat, &le);
        if (st == HS_NOMEM)
            return exb_nomem(b);
        if (st != HS_OK)
            return exb_err(b, st, pat->loc, "%s", le.msg);
    }
    *out = n;
    return exb_fold(b, out, false);
}




static hs_status bind_aexpr(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    const char *kind = exb_jstr(body, "kind");
    bool other;
    const char *opname = exb_last_name(json_object_get(body, "name"), &other);
    if (!kind || !opname)
        return exb_err(b, HS_INTERNAL, loc, "malformed operator expression");
    if (other)
        return exb_err(b, HS_UNSUPPORTED, loc, "OPERATOR() syntax is not supported");
    if (!strcmp(kind, "AEXPR_IN"))
        return bind_in(b, body, strcmp(opname, "<>") == 0, loc, out);
    if (!strncmp(kind, "AEXPR_BETWEEN", 13) || !strncmp(kind, "AEXPR_NOT_BETWEEN", 17))
        return bind_between(b, body, kind, loc, out);
    if (!strcmp(kind, "AEXPR_LIKE") || !strcmp(kind, "AEXPR_ILIKE"))
        return bind_like(b, body, opname, !strcmp(kind, "AEXPR_ILIKE"), loc, out);
    if (!strcmp(kind, "AEXPR_NULLIF")) {
        ex_node *l, *r;
        HS_TRY(exb_bind(b, json_object_get(body, "lexpr"), &l));
        HS_TRY(exb_bind(b, json_object_get(body, "rexpr"), &r));
        ex_node *lr[2] = {l, r};
        HS_TRY(lift_arrays(b, lr, 2));
        l = lr[0];
        r = lr[1];
        ex_ty t;
        char b1[48], b2[48];
        if (!common_type(&l->type, &r->type, &t))
            return exb_err(b, HS_INVALID, loc, "NULLIF types %s and %s cannot be matched",
                          exb_tname(&l->type, b1), exb_tname(&r->type, b2));
        if (t.t == EX_T_UNKNOWN)
            t = exb_ty(EX_T_STR);
        if (t.t == EX_T_NULL)
            t = exb_ty(EX_T_INT);
        HS_TRY(exb_coerce(b, &l, t));
        HS_TRY(exb_coerce(b, &r, t));
        ex_node *n = exb_mk(b, EX_NULLIF, t, loc, 2);
        if (!n)
            return exb_nomem(b);
        n->args[0] = l;
        n->args[1] = r;
        n->cmode = cmode_of(&t);
        *out = n;
        return exb_fold(b, out, false);
    }
    if (!strcmp(kind, "AEXPR_DISTINCT") || !strcmp(kind, "AEXPR_NOT_DISTINCT")) {
        ex_node *l, *r;
        HS_TRY(exb_bind(b, json_object_get(body, "lexpr"), &l));
        HS_TRY(exb_bind(b, json_object_get(body, "rexpr"), &r));
        ex_node *n = exb_mk(b, EX_DISTINCT, exb_ty(EX_T_BOOL), loc, 2);
        if (!n)
            return exb_nomem(b);
        bool okl = false, okr = false;
        if (exb_ta_is(l) || exb_ta_is(r)) {   /* text[] values */
            HS_TRY(exb_ta_coerce(b, &l, &okl));
            HS_TRY(exb_ta_coerce(b, &r, &okr));
        }
        if (!okl && !okr && (exb_na_is(l) || exb_na_is(r))) {   /* numeric arrays */
            ex_node *lr[2] = {l, r};
            HS_TRY(exb_na_unify(b, lr, 2, &okl));
            l = lr[0];
            r = lr[1];
            okr = okl;
        }
        if (okl && okr)
            n->cmode = EX_CM_PV;
        else
            HS_TRY(unify_cmp(b, &l, &r, loc, "IS DISTINCT FROM", &n->cmode));
        n->args[0] = l;
        n->args[1] = r;
        n->neg = !strcmp(kind, "AEXPR_NOT_DISTINCT");
        *out = n;
        return exb_fold(b, out, false);
    }
    if (!strcmp(kind, "AEXPR_OP_ANY") || !strcmp(kind, "AEXPR_OP_ALL"))
        return exb_any_all(b, body, opname, !strcmp(kind, "AEXPR_OP_ALL"), loc, out);
    if (strcmp(kind, "AEXPR_OP") != 0) {
        const char *what = !strcmp(kind, "AEXPR_SIMILAR") ? "SIMILAR TO"
                         : !strncmp(kind, "AEXPR_OP_A", 10) ? "ANY/ALL" : kind;
        return exb_err(b, HS_UNSUPPORTED, loc, "%s is not supported", what);
    }
    json_t *lj = json_object_get(body, "lexpr"), *rj = json_object_get(body, "rexpr");
    if (!rj)
        return exb_err(b, HS_UNSUPPORTED, loc, "postfix operators are not supported");
    if (!lj) {
        ex_node *x;
        HS_TRY(exb_bind(b, rj, &x));
        if (!strcmp(opname, "-"))
            return bind_neg(b, x, loc, out);
        if (!strcmp(opname, "+")) {
            if (x->type.t == EX_T_UNKNOWN)
                HS_TRY(exb_cast_to(b, &x, exb_ty(EX_T_INT), true));
            if (!exb_is_num(x->type.t) && x->type.t != EX_T_NULL) {
                char b1[48];
                return exb_err(b, HS_INVALID, loc, "operator does not exist: + %s", exb_tname(&x->type, b1));
            }
            *out = x;
            return HS_OK;
        }
        return exb_err(b, HS_UNSUPPORTED, loc, "operator %s is not supported", opname);
    }
    if (exb_pv_opname(opname)) {
        ex_node *l, *r;
        HS_TRY(exb_bind(b, lj, &l));
        HS_TRY(exb_bind(b, rj, &r));
        return exb_pv_op(b, opname, l, r, loc, out);
    }
    if (!strcmp(opname, "@>") || !strcmp(opname, "<@") || !strcmp(opname, "&&"))
        return exb_contains(b, opname, lj, rj, loc, out);
    if (!strcmp(opname, "~") || !strcmp(opname, "~*") || !strcmp(opname, "!~") || !strcmp(opname, "!~*")) {
        ex_node *l, *r;
        HS_TRY(exb_bind(b, lj, &l));
        HS_TRY(exb_bind(b, rj, &r));
        return exb_regex_op(b, opname, l, r, loc, out);
    }
    if (!strcmp(opname, "^")) { /* power: double precision (numeric: see docs/sql.md) */
        ex_node *l, *r;
        HS_TRY(exb_bind(b, lj, &l));
        HS_TRY(exb_bind(b, rj, &r));
        ex_node **a = hs_arena_alloc(&b->e->arena, 2 * sizeof *a);
        if (!a)
            return exb_nomem(b);
        a[0] = l;
        a[1] = r;
        return exb_func_more(b, "power", EX_FN_POWER, a, 2, loc, out);
    }
    int cmp = exb_parse_cmp_op(opname);
    static const char arith[] = "+-*/%";
    int aop = strlen(opname) == 1 && strchr(arith, opname[0]) ? opname[0]
            : !strcmp(opname, "||") ? '|' : 0;
    if (cmp < 0 && !aop)
        return exb_err(b, HS_UNSUPPORTED, loc, "operator %s is not supported", opname);
    ex_node *l, *r;
    HS_TRY(exb_bind(b, lj, &l));
    HS_TRY(exb_bind(b, rj, &r));
    if (ex_is_pv(l->type.t) || ex_is_pv(r->type.t))
        return exb_pv_op(b, opname, l, r, loc, out);
    if (aop == '|' && (exb_na_is(l) || exb_na_is(r)) && !exb_ta_is(l) && !exb_ta_is(r))
        return exb_na_op(b, l, r, loc, out);   /* numeric arrays */
    if (exb_ta_is(l) || exb_ta_is(r))   /* text[] = text[], text[] || ... */
        return exb_ta_op(b, opname, l, r, loc, out);
    if (cmp >= 0 && (exb_na_is(l) || exb_na_is(r)))   /* numeric arrays */
        return exb_na_cmp(b, opname, cmp, l, r, loc, out);
    if (cmp >= 0)
        return make_cmp(b, cmp, l, r, loc, out);
    return exb_arith(b, aop, l, r, loc, out);
}

static hs_status bind_boolexpr(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    const char *op = exb_jstr(body, "boolop");
    json_t *args = json_object_get(body, "args");
    ex_node **a;
    int n;
    HS_TRY(exb_list(b, args, &a, &n));
    if (!op || n == 0)
        return exb_err(b, HS_INTERNAL, loc, "malformed boolean expression");
    bool is_not = !strcmp(op, "NOT_EXPR"), is_and = !strcmp(op, "AND_EXPR");
    const char *what = is_not ? "NOT" : is_and ? "AND" : "OR";
    for (int i = 0; i < n; i++)
        HS_TRY(exb_need_bool(b, &a[i], what));
    if (is_not)
        return make_not(b, a[0], loc, out);
    /* constant terms: FALSE decides an AND (TRUE an OR) whatever the other
     * terms are, so they are not evaluated; TRUE in an AND (FALSE in an OR)
     * changes nothing and goes (PostgreSQL's and DuckDB's planners do the same) */
    int m = 0;
    for (int i = 0; i < n; i++) {
        const ex_node *x = a[i];
        if (exb_is_const(x) && !x->val.null) {
            if ((x->val.i != 0) != is_and) {
                *out = a[i];
                return HS_OK;
            }
            continue;
        }
        a[m++] = a[i];
    }
    if (m == 0) {
        ex_node *c = exb_mk_const(b, exb_ty(EX_T_BOOL), loc);
        if (!c)
            return exb_nomem(b);
        c->val.i = is_and;
        *out = c;
        return HS_OK;
    }
    n = m;
    if (n == 1) {
        *out = a[0];
        return HS_OK;
    }
    ex_node *x = exb_mk(b, is_and ? EX_AND : EX_OR, exb_ty(EX_T_BOOL), loc, 0);
    if (!x)
        return exb_nomem(b);
    x->args = a;
    x->n_args = n;
    *out = x;
    return exb_fold(b, out, false);
}

static hs_status bind_case(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    json_t *whens = json_object_get(body, "args");
    size_t nw = json_array_size(whens);
    if (nw == 0 || nw > 100000)
        return exb_err(b, HS_INVALID, loc, "malformed CASE");
    bool subject = json_object_get(body, "arg") != NULL;
    int off = subject ? 1 : 0;
    ex_node *n = exb_mk(b, EX_CASE, exb_ty(EX_T_NULL), loc, (int)(2 * nw + 1) + off);
    if (!n)
        return exb_nomem(b);
    n->aux = subject;
    if (subject)
        HS_TRY(exb_bind(b, json_object_get(body, "arg"), &n->args[0]));
    for (size_t i = 0; i < nw; i++) {
        const char *k;
        json_t *wb;
        if (!exb_node_of(json_array_get(whens, i), &k, &wb) || strcmp(k, "CaseWhen") != 0)
            return exb_err(b, HS_INTERNAL, loc, "malformed CASE");
        HS_TRY(exb_bind(b, json_object_get(wb, "expr"), &n->args[off + 2 * i]));
        if (!subject)
            HS_TRY(exb_need_bool(b, &n->args[off + 2 * i], "CASE/WHEN"));
        HS_TRY(exb_bind(b, json_object_get(wb, "result"), &n->args[off + 2 * i + 1]));
    }
    int last = off + (int)(2 * nw);
    if (json_object_get(body, "defresult"))
        HS_TRY(exb_bind(b, json_object_get(body, "defresult"), &n->args[last]));
    else if (!(n->args[last] = mk_null(b, exb_ty(EX_T_NULL), loc)))
        return exb_nomem(b);
    if (subject) {
        /* CASE x WHEN v1 ... : x and every v compare in one type */
        ex_node **cmp = hs_arena_calloc(&b->e->arena, nw + 1, sizeof *cmp);
        if (!cmp)
            return exb_nomem(b);
        cmp[0] = n->args[0];
        for (size_t i = 0; i < nw; i++)
            cmp[i + 1] = n->args[1 + 2 * i];
        HS_TRY(unify_many(b, cmp, (int)nw + 1, loc, "CASE/WHEN", &n->cmode));
        n->args[0] = cmp[0];
        for (size_t i = 0; i < nw; i++)
            n->args[1 + 2 * i] = cmp[i + 1];
    }
    ex_ty t = exb_ty(EX_T_NULL);
    char b1[48], b2[48];
    {
        ex_node **res = hs_arena_alloc(&b->e->arena, sizeof *res * (nw + 1));
        if (!res)
            return exb_nomem(b);
        for (size_t i = 0; i <= nw; i++)
            res[i] = n->args[i == nw ? last : off + 2 * (int)i + 1];
        HS_TRY(lift_arrays(b, res, (int)nw + 1));
        for (size_t i = 0; i <= nw; i++)
            n->args[i == nw ? last : off + 2 * (int)i + 1] = res[i];
    }
    for (size_t i = 0; i <= nw; i++) {
        ex_node *r = n->args[i == nw ? last : off + 2 * (int)i + 1];
        ex_ty u;
        if (!common_type(&t, &r->type, &u))
            return exb_err(b, HS_INVALID, r->loc >= 0 ? r->loc : loc, "CASE types %s and %s cannot be matched",
                          exb_tname(&t, b1), exb_tname(&r->type, b2));
        t = u;
    }
    if (t.t == EX_T_UNKNOWN)
        t = exb_ty(EX_T_STR);
    for (size_t i = 0; i <= nw; i++)
        HS_TRY(exb_coerce(b, &n->args[i == nw ? last : off + 2 * (int)i + 1], t));
    n->type = t;
    *out = n;
    return exb_fold(b, out, false);
}

static hs_status bind_coalesce(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    ex_node **a;
    int n;
    HS_TRY(exb_list(b, json_object_get(body, "args"), &a, &n));
    if (n == 0)
        return exb_err(b, HS_INVALID, loc, "COALESCE needs arguments");
    HS_TRY(lift_arrays(b, a, n));
    ex_ty t = exb_ty(EX_T_NULL);
    char b1[48], b2[48];
    for (int i = 0; i < n; i++) {
        ex_ty u;
        if (!common_type(&t, &a[i]->type, &u))
            return exb_err(b, HS_INVALID, a[i]->loc >= 0 ? a[i]->loc : loc,
                          "COALESCE types %s and %s cannot be matched", exb_tname(&t, b1), exb_tname(&a[i]->type, b2));
        t = u;
    }
    if (t.t == EX_T_UNKNOWN)
        t = exb_ty(EX_T_STR);
    for (int i = 0; i < n; i++)
        HS_TRY(exb_coerce(b, &a[i], t));
    ex_node *x = exb_mk(b, EX_COALESCE, t, loc, 0);
    if (!x)
        return exb_nomem(b);
    x->args = a;
    x->n_args = n;
    *out = x;
    return exb_fold(b, out, false);
}

/* The scale of the numeric PostgreSQL reads from decimal text (numeric_in's
 * display scale: the fraction digits less the exponent) and its integer
 * digits; false when p is not a number. */
static bool numeric_text_scale(const char *p, size_t n, int *scale, int *int_dig)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)p[i]))
        i++;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        i++;
    int before = 0, frac = 0, lead = 1;
    bool dot = false, any = false;
    for (; i < n && (isdigit((unsigned char)p[i]) || (p[i] == '.' && !dot)); i++) {
        if (p[i] == '.') {
            dot = true;
            continue;
        }
        any = true;
        if (dot)
            frac++;
        else if (p[i] != '0' || !lead)
            before++, lead = 0;
    }
    if (!any)
        return false;
    long e = 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        char *end;
        char tmp[16];
        size_t k = 0;
        for (i++; i < n && k + 1 < sizeof tmp && (isdigit((unsigned char)p[i]) || p[i] == '-' || p[i] == '+'); i++)
            tmp[k++] = p[i];
        tmp[k] = '\0';
        e = strtol(tmp, &end, 10);
        if (e > 1000 || e < -1000)
            return false;
    }
    long s = frac - e, d = before + e;
    *scale = (int)(s < 0 ? 0 : s);
    *int_dig = (int)(d < 1 ? 1 : d);
    return true;
}

/* The type of x::numeric without a type modifier.  PostgreSQL's
 * unconstrained numeric keeps every value with its own display scale; a
 * decimal128 column has one scale, so: a numeric stays as it is, an
 * integer becomes numeric(n, 0), a constant gets exactly the scale
 * PostgreSQL gives it (a double reads as its shortest text of 15
 * significant digits, DBL_DIG, a real of 6), and other doubles and text
 * columns get scale EX_NUMERIC_SCALE (so values keep every digit down to
 * 10^-20, as quotient columns do; integer parts of 10^18 and more overflow
 * with 22003).  bind_cast marks a cast of a double (aux = 1): its values'
 * display scale is that of their digits without trailing zeros, which
 * numeric division reads (expr_eval.c ev_arith).  A NULL is
 * numeric(18,3) (a plain `numeric` column is refused in DDL: sql/ddl.c). */
static void unconstrained_numeric(const ex_node *x, ex_ty *t)
{
    const ex_ty *xt = &x->type;
    switch (xt->t) {
    case EX_T_DEC: *t = *xt; return;
    case EX_T_INT: *t = exb_dec_type(exb_int_digits(xt), 0); return;
    case EX_T_NULL: *t = exb_dec_type(15, 3); return;
    default: break;
    }
    *t = exb_dec_type(38 - EX_NUMERIC_SCALE, EX_NUMERIC_SCALE);
    if (!exb_is_const(x) || x->val.null)
        return;
    char buf[64];
    const char *p = buf;
    size_t n;
    if (xt->t == EX_T_FLOAT) {
        if (!isfinite(x->val.f))
            return;
        int w = hs_snprintf_c(buf, sizeof buf, "%.*g", xt->bits == 32 ? 6 : 15, x->val.f);
        n = w > 0 && (size_t)w < sizeof buf ? (size_t)w : 0;
    } else if (xt->t == EX_T_STR || xt->t == EX_T_UNKNOWN) {
        p = (const char *)x->val.s.p;
        n = x->val.s.n;
    } else {
        return;
    }
    int s, d;
    if (!numeric_text_scale(p, n, &s, &d) || s > 38)
        return;
    *t = exb_dec_type(d + s > 38 ? 38 - s : d, s);
}

static hs_status bind_cast(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    ex_ty t;
    HS_TRY(bind_typename(b, json_object_get(body, "typeName"), &t));
    ex_node *x;
    const char *ak;
    json_t *ab;
    if (t.t == EX_T_ARRAY && exb_node_of(json_object_get(body, "arg"), &ak, &ab) &&
        !strcmp(ak, "A_ArrayExpr"))
        HS_TRY(exb_pv_array(b, ab, &t, &x));   /* ARRAY[]::int[] */
    else
        HS_TRY(exb_bind(b, json_object_get(body, "arg"), &x));
    bool unconstrained = t.t == EX_T_DEC && t.prec == 0;
    if (unconstrained) {
        if (x->type.t == EX_T_DEC) {
            *out = x; /* numeric::numeric keeps the value and its scale */
            return HS_OK;
        }
        if (exb_is_num(x->type.t) || x->type.t == EX_T_NULL || x->type.t == EX_T_STR ||
            x->type.t == EX_T_UNKNOWN)
            unconstrained_numeric(x, &t);
        else
            t = exb_dec_type(15, 3); /* for the error message */
    }
    if (loc < 0)
        loc = x->loc; /* DATE '...' has no location of its own */
    char b1[48], b2[48];
    if (x->type.t == EX_T_OTHER && exb_ta_is(x) && (t.t == EX_T_STR || t.t == EX_T_ARRAY)) {
        bool ok;   /* a list<string> column as a text[] value */
        HS_TRY(exb_ta_coerce(b, &x, &ok));
    } else if (x->type.t == EX_T_OTHER && exb_na_is(x) && (t.t == EX_T_STR || t.t == EX_T_ARRAY)) {
        bool ok;   /* a list column of numbers as a numeric array value */
        HS_TRY(exb_na_unify(b, &x, 1, &ok));
    }
    if (!castable(&x->type, &t))
        return exb_err(b, HS_INVALID, loc, "cannot cast type %s to %s", exb_tname(&x->type, b1), exb_tname(&t, b2));
    if (!unconstrained && t.t == EX_T_DEC && x->kind == EX_ARITH && x->op == '/' &&
        x->type.t == EX_T_DEC && x->args[0]->type.t == EX_T_DEC && x->args[1]->type.t == EX_T_DEC &&
        t.scale >= 0 && t.scale <= 38) {
        /* CAST(a / b AS numeric(p, s)): PostgreSQL rounds the quotient (at
         * its division scale) to s; the quotient is computed at that
         * scale (EX_DIV_ROUND), so a quotient whose integer digits would
         * not fit beside the division's usual scale in 38 digits still
         * has its value (avg of bigints near 2^63, plan_select.c) */
        x->type = exb_dec_type(38 - t.scale, t.scale);
        x->aux = EX_DIV_ROUND;
    }
    if (x->kind == EX_CONST && x->val.null) {
        *out = mk_null(b, t, loc);
        return *out ? HS_OK : exb_nomem(b);
    }
    ex_node *n = exb_mk(b, EX_CAST, t, loc, 1);
    if (!n)
        return exb_nomem(b);
    n->args[0] = x;
    n->aux = unconstrained && x->type.t == EX_T_FLOAT;
    *out = n;
    /* a typed literal (DATE 'x', 'NaN'::double) must convert now */
    return exb_fold(b, out, x->type.t == EX_T_UNKNOWN);
}

static hs_status row_nulltest(ex_binder *b, ex_node *x, bool not_null, int loc, ex_node **out)
{
    *out = NULL;
    if (!b->scope || x->kind != EX_COL || !x->field || x->field->type != HS_TYPE_STRUCT ||
        x->field->n_children < 1)
        return HS_OK;
    int nf = x->field->n_children;
    ex_node *all = exb_mk(b, EX_AND, exb_ty(EX_T_BOOL), loc, nf);
    if (!all)
        return exb_nomem(b);
    for (int i = 0; i < nf; i++) {
        ex_node *c, *t = exb_mk(b, EX_IS_NULL, exb_ty(EX_T_BOOL), loc, 1);
        if (!t)
            return exb_nomem(b);
        HS_TRY(exb_struct_field(b, x, &x->field->children[i], x->loc, &c));
        t->args[0] = c;
        t->neg = not_null;
        all->args[i] = t;
    }
    *out = nf == 1 ? all->args[0] : all;
    return HS_OK;
}

static hs_status bind_nulltest(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    ex_node *x;
    HS_TRY(exb_bind(b, json_object_get(body, "arg"), &x));
    const char *t = exb_jstr(body, "nulltesttype");
    HS_TRY(row_nulltest(b, x, t && !strcmp(t, "IS_NOT_NULL"), loc, out));
    if (*out)
        return HS_OK;
    ex_node *n = exb_mk(b, EX_IS_NULL, exb_ty(EX_T_BOOL), loc, 1);
    if (!n)
        return exb_nomem(b);
    n->args[0] = x;
    n->neg = t && !strcmp(t, "IS_NOT_NULL");
    *out = n;
    return exb_fold(b, out, false);
}

static hs_status bind_booltest(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    ex_node *x;
    HS_TRY(exb_bind(b, json_object_get(body, "arg"), &x));
    HS_TRY(exb_need_bool(b, &x, "IS TRUE/FALSE/UNKNOWN"));
    const char *t = exb_jstr(body, "booltesttype");
    static const char *names[] = {"IS_TRUE", "IS_NOT_TRUE", "IS_FALSE", "IS_NOT_FALSE", "IS_UNKNOWN",
                                  "IS_NOT_UNKNOWN"};
    int which = -1;
    for (int i = 0; i < 6 && t; i++)
        if (!strcmp(t, names[i]))
            which = i;
    if (which < 0)
        return exb_err(b, HS_INTERNAL, loc, "malformed boolean test");
    ex_node *n = exb_mk(b, EX_BOOLTEST, exb_ty(EX_T_BOOL), loc, 1);
    if (!n)
        return exb_nomem(b);
    n->args[0] = x;
    n->op = which;
    *out = n;
    return exb_fold(b, out, false);
}

static const char *unsupported_name(const char *k)
{
    static const struct { const char *node, *what; } t[] = {
        {"SubLink", "subqueries"}, {"ParamRef", "parameters ($n)"},
        {"RowExpr", "row constructors"},
        {"CollateClause", "COLLATE"}, {"A_ArrayExpr", "ARRAY constructors"},
        {"SQLValueFunction", "CURRENT_DATE and similar functions"},
        {"MinMaxExpr", "GREATEST and LEAST"}, {"GroupingFunc", "GROUPING"},
        {"XmlExpr", "XML functions"}, {"SetToDefault", "DEFAULT"}, {"A_Star", "'*'"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(k, t[i].node))
            return t[i].what;
    return NULL;
}


hs_status exb_bind(ex_binder *b, json_t *j, ex_node **out)
{
    const char *k;
    json_t *body;
    if (!exb_node_of(j, &k, &body))
        return exb_err(b, HS_INTERNAL, -1, "malformed parse tree");
    if (++b->depth > EX_MAX_DEPTH) {
        b->depth--;
        return exb_err(b, HS_INVALID, exb_loc(body), "expression nested too deeply (more than %d levels)",
                      EX_MAX_DEPTH);
    }
    hs_status st;
    int col = -1;
    if (b->scope && b->scope->node &&
        ((st = b->scope->node(b->scope->ctx, j, &col, b->err)) != HS_OK || col >= 0)) {
        if (st == HS_OK)
            st = scope_col(b, col, exb_loc(body), out);
    } else if (!strcmp(k, "A_Const"))
        st = bind_const(b, body, out);
    else if (!strcmp(k, "ColumnRef"))
        st = bind_column(b, body, out);
    else if (!strcmp(k, "A_Expr"))
        st = bind_aexpr(b, body, out);
    else if (!strcmp(k, "BoolExpr"))
        st = bind_boolexpr(b, body, out);
    else if (!strcmp(k, "NullTest"))
        st = bind_nulltest(b, body, out);
    else if (!strcmp(k, "BooleanTest"))
        st = bind_booltest(b, body, out);
    else if (!strcmp(k, "TypeCast"))
        st = bind_cast(b, body, out);
    else if (!strcmp(k, "FuncCall"))
        st = exb_func(b, body, out);
    else if (!strcmp(k, "CaseExpr"))
        st = bind_case(b, body, out);
    else if (!strcmp(k, "CoalesceExpr"))
        st = bind_coalesce(b, body, out);
    else if (!strcmp(k, "A_ArrayExpr"))
        st = exb_pv_array(b, body, NULL, out);
    else if (!strcmp(k, "A_Indirection"))
        st = exb_indirection(b, body, out);
    else {
        const char *what = unsupported_name(k);
        int loc = exb_loc(body);
        if (loc < 0)
            loc = first_loc(body, 0);
        st = what ? exb_err(b, HS_UNSUPPORTED, loc, "%s are not supported in expressions", what)
                  : exb_err(b, HS_UNSUPPORTED, loc, "unsupported expression (%s)", k);
    }
    b->depth--;
    return st;
}

/* ------------------------------------------------------------------ */
/* binding against a scope (ex_bind_json)                              */

static hs_status make_root_type(ex_expr *e, hs_error *err);

/* Column idx of the scope's schema as a COL node. */
static hs_status scope_col(ex_binder *b, int idx, int loc, ex_node **out)
{
    const hs_field *sch = b->scope->schema;
    if (idx < 0 || idx >= sch->n_children)
        return exb_err(b, HS_INTERNAL, loc, "scope column %d out of range", idx);
    const hs_field *f = &sch->children[idx];
    ex_ty t = type_of_field(f);
    ex_node *c = exb_mk(b, EX_COL, t, loc, 0);
    const char *nm = f->name ? f->name : "";
    char *name = hs_arena_strndup(&b->e->arena, nm, strlen(nm));
    const char **path = hs_arena_calloc(&b->e->arena, 1, sizeof *path);
    if (!c || !name || !path)
        return exb_nomem(b);
    path[0] = f->name;
    c->field = f;
    c->field_id = f->field_id;
    c->name = name;
    c->path = path;
    c->path_len = 1;
    c->slot = b->e->n_slots++;
    *out = c;
    return HS_OK;
}

/* A ColumnRef resolved by the scope: PostgreSQL's errors (undefined column,
 * ambiguous reference) with the position of the reference. */
static hs_status bind_scope_column(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    json_t *fields = json_object_get(body, "fields");
    size_t n = json_array_size(fields);
    if (n == 0 || n > 8)
        return exb_err(b, HS_UNSUPPORTED, loc, "unsupported column reference");
    const char *names[8];
    char full[512];
    size_t fl = 0;
    full[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *k;
        json_t *nb;
        size_t len;
        if (exb_node_of(json_array_get(fields, i), &k, &nb) && strcmp(k, "A_Star") == 0)
            return exb_err(b, HS_UNSUPPORTED, loc, "'*' is not allowed here");
        names[i] = exb_string_node(json_array_get(fields, i), &len);
        if (!names[i])
            return exb_err(b, HS_UNSUPPORTED, loc, "unsupported column reference");
        int w = snprintf(full + fl, sizeof full - fl, "%s%s", i ? "." : "", names[i]);
        if (w > 0)
            fl = fl + (size_t)w < sizeof full ? fl + (size_t)w : sizeof full - 1;
    }
    int idx = b->scope->column(b->scope->ctx, names, (int)n);
    if (idx == -2)
        return exb_err(b, HS_INVALID, loc, "column reference \"%s\" is ambiguous", full);
    if (idx < 0)
        return exb_err(b, HS_NOT_FOUND, loc, "column \"%s\" does not exist", full);
    return scope_col(b, idx, loc, out);
}

hs_status ex_bind_json(const struct json_t *node, const char *text, const ex_scope *scope, bool filter,
                       ex_expr **out, hs_error *err)
{
    *out = NULL;
    if (!scope || !scope->schema || scope->schema->type != HS_TYPE_STRUCT || !scope->column)
        return hs_err_set(err, HS_INVALID, "expression: the scope needs a struct schema and a resolver");
    ex_expr *e = hs_calloc(1, sizeof *e);
    if (!e)
        return hs_err_nomem(err, sizeof *e);
    e->schema = scope->schema;
    size_t len = text ? strlen(text) : 0;
    e->text = hs_arena_strndup(&e->arena, text ? text : "", len);
    if (!e->text) {
        ex_free(e);
        return hs_err_nomem(err, len);
    }
    ex_binder b = {.e = e, .err = err, .scope = scope, .query = e->text, .query_len = len};
    int saved = tl_prefix_len;
    tl_prefix_len = 0;
    hs_status st = exb_bind(&b, (json_t *)node, &e->root);
    tl_prefix_len = saved;
    if (st == HS_OK && filter) {
        ex_t t = e->root->type.t;
        if (t == EX_T_NULL || t == EX_T_UNKNOWN) {
            st = exb_cast_to(&b, &e->root, exb_ty(EX_T_BOOL), true);
        } else if (t != EX_T_BOOL) {
            char b1[48];
            st = ex_err_at(err, HS_INVALID, e->text, e->root->loc,
                           "argument of %s must be type boolean, not type %s",
                           "WHERE", exb_tname(&e->root->type, b1));
        }
    }
    /* a nested column itself (count(s) of a struct) is passed through;
     * expressions cannot compute nested values */
    if (st == HS_OK && e->root->type.t == EX_T_OTHER &&
        (!scope->nested_ok || e->root->kind != EX_COL || e->root->sub > 0 || !e->root->field))
        st = ex_err_at(err, HS_UNSUPPORTED, e->text, e->root->loc,
                       "expressions cannot return nested columns");
    if (st == HS_OK)
        st = make_root_type(e, err);
    if (st != HS_OK) {
        ex_free(e);
        return st;
    }
    *out = e;
    return HS_OK;
}


/* ------------------------------------------------------------------ */
/* the statement around the expression                                 */

/* An upper bound on how deeply text can nest: every nesting level needs an
 * operator character, a word or a '(' of its own, so count those (numbers,
 * commas, spaces and ')' cannot nest anything).  Quotes and comments are not
 * skipped: a wrong guess about where a string ends must not lower the count. */
static size_t nest_bound(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (isalpha(c) || c == '_' || c >= 0x80) {
            count++;
            while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '$' ||
                             (unsigned char)s[i] >= 0x80))
                i++;
        } else if (isdigit(c)) {
            while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '.'))
                i++;
        } else if (c == ',' || isspace(c) || c == ')' || c == ';') {
            i++;
        } else {
            count++;
            i++;
        }
    }
    return count;
}

/* libpg_query turns the tree into JSON with one level of C recursion per
 * level of nesting (up to ~150 bytes of stack each).  Text that could nest
 * more than EX_DIRECT_NEST levels is parsed on a thread whose stack is sized
 * by the bound. */
#define EX_DIRECT_NEST 1000
#define EX_STACK_PER_LEVEL 512
#define EX_MAX_NEST 200000u

typedef struct pg_job {
    const char *query;
    PgQueryParseResult r;
} pg_job;

static void *pg_thread(void *arg)
{
    pg_job *j = arg;
    j->r = pg_query_parse(j->query);
    return NULL; /* libpg_query frees its per-thread memory when the thread exits */
}

static hs_status pg_parse(const char *query, size_t bound, PgQueryParseResult *r, hs_error *err)
{
    if (bound <= EX_DIRECT_NEST) {
        *r = pg_query_parse(query);
        return HS_OK;
    }
    size_t stack = bound * EX_STACK_PER_LEVEL + (1u << 20);
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return hs_err_set(err, HS_NOMEM, "expression: cannot start the parser thread");
    pg_job job = {.query = query};
    pthread_t t;
    int rc = pthread_attr_setstacksize(&attr, stack);
    if (rc == 0)
        rc = pthread_create(&t, &attr, pg_thread, &job);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return hs_err_set(err, HS_NOMEM, "expression: cannot start the parser thread (%zu-byte stack)", stack);
    pthread_join(t, NULL);
    *r = job.r;
    return HS_OK;
}

static const char *clause_name(const char *key)
{
    static const struct { const char *key, *name; } t[] = {
        {"sortClause", "ORDER BY"}, {"groupClause", "GROUP BY"}, {"havingClause", "HAVING"},
        {"windowClause", "WINDOW"}, {"limitCount", "LIMIT"}, {"limitOffset", "OFFSET"},
        {"lockingClause", "FOR UPDATE/SHARE"}, {"distinctClause", "DISTINCT"},
        {"intoClause", "INTO"}, {"withClause", "WITH"}, {"valuesLists", "VALUES"},
        {"larg", "UNION/INTERSECT/EXCEPT"}, {"rarg", "UNION/INTERSECT/EXCEPT"},
        {"op", "UNION/INTERSECT/EXCEPT"}, {"limitOption", "LIMIT"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(key, t[i].key))
            return t[i].name;
    return key;
}

static hs_status check_stmt(ex_binder *b, json_t *root, json_t **where)
{
    json_t *stmts = json_object_get(root, "stmts");
    size_t n = json_array_size(stmts);
    if (n == 0)
        return exb_err(b, HS_INTERNAL, -1, "the parser returned no statement");
    if (n > 1) {
        json_t *s0 = json_array_get(stmts, 0);
        json_t *len = json_object_get(s0, "stmt_len");
        int loc = json_is_integer(len) ? (int)json_integer_value(len) - PREFIX_LEN : -1;
        return exb_err(b, HS_INVALID, loc,
                      "a filter is one expression, not several statements");
    }
    json_t *stmt = json_object_get(json_array_get(stmts, 0), "stmt");
    const char *k;
    json_t *sel;
    if (!exb_node_of(stmt, &k, &sel) || strcmp(k, "SelectStmt") != 0)
        return exb_err(b, HS_INVALID, -1, "a filter is one expression");
    const char *key;
    json_t *v;
    json_object_foreach(sel, key, v) {
        if (!strcmp(key, "targetList") || !strcmp(key, "fromClause") || !strcmp(key, "whereClause"))
            continue;
        if (!strcmp(key, "limitOption") && json_is_string(v) &&
            !strcmp(json_string_value(v), "LIMIT_OPTION_DEFAULT"))
            continue;
        if (!strcmp(key, "op") && json_is_string(v) && !strcmp(json_string_value(v), "SETOP_NONE"))
            continue;
        return exb_err(b, HS_INVALID, first_loc(v, 0), "a filter is one expression; %s is not allowed",
                      clause_name(key));
    }
    if (json_array_size(json_object_get(sel, "targetList")) != 1 ||
        json_array_size(json_object_get(sel, "fromClause")) != 1)
        return exb_err(b, HS_INVALID, -1, "a filter is one expression");
    *where = json_object_get(sel, "whereClause");
    if (!*where)
        return exb_err(b, HS_INVALID, -1, "a filter is one expression");
    return HS_OK;
}

static bool blank(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

static hs_status make_root_type(ex_expr *e, hs_error *err)
{
    ex_ty t = e->root->type;
    if (t.t == EX_T_UNKNOWN)
        t.t = EX_T_STR;
    if (t.t == EX_T_OTHER && e->root->kind == EX_COL && e->root->field) {
        /* a nested column, passed through (ex_eval) */
        char *nm = hs_strdup("");
        if (!nm || hs_field_copy(e->root->field, &e->type_field) != HS_OK) {
            hs_free(nm);
            return hs_err_nomem(err, 0);
        }
        hs_free(e->type_field.name);
        e->type_field.name = nm;
        return HS_OK;
    }
    hs_status st = ex_type_to_field(&t, "", &e->type_field);
    if (st != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

static hs_status parse(const char *text, const hs_field *schema, bool filter, ex_expr **out,
                       hs_error *err)
{
    *out = NULL;
    if (!schema || schema->type != HS_TYPE_STRUCT)
        return hs_err_set(err, HS_INVALID, "expression: the schema must be a struct");
    ex_expr *e = hs_calloc(1, sizeof *e);
    if (!e)
        return hs_err_nomem(err, sizeof *e);
    e->schema = schema;
    size_t len = text ? strlen(text) : 0;
    hs_status st = HS_OK;
    ex_binder b = {.e = e, .err = err};
    char *query = NULL;
    json_t *root = NULL;
    if (len > EX_MAX_TEXT) {
        st = hs_err_set(err, HS_INVALID, "expression: the text is %zu bytes, more than the limit of %u",
                        len, EX_MAX_TEXT);
        goto done;
    }
    e->text = hs_arena_strndup(&e->arena, text ? text : "", len);
    if (!e->text) {
        st = hs_err_nomem(err, len);
        goto done;
    }
    if (blank(text)) {
        if (!filter) {
            st = hs_err_set(err, HS_INVALID, "expression: the text is empty");
            goto done;
        }
        e->root = exb_mk_const(&b, exb_ty(EX_T_BOOL), -1);
        if (!e->root) {
            st = hs_err_nomem(err, 0);
            goto done;
        }
        e->root->val.i = 1;
        st = make_root_type(e, err);
        goto done;
    }
    size_t bound = nest_bound(text, len);
    if (bound > EX_MAX_NEST) {
        st = hs_err_set(err, HS_INVALID, "expression: too many operators, words and parentheses "
                        "(more than %u): nested too deeply or too long", EX_MAX_NEST);
        goto done;
    }
    query = hs_malloc((size_t)PREFIX_LEN + len + 1);
    if (!query) {
        st = hs_err_nomem(err, len);
        goto done;
    }
    memcpy(query, PREFIX, (size_t)PREFIX_LEN);
    memcpy(query + PREFIX_LEN, text, len + 1);
    b.query = query;
    b.query_len = (size_t)PREFIX_LEN + len;
    PgQueryParseResult r;
    if ((st = pg_parse(query, bound, &r, err)) != HS_OK)
        goto done;
    if (r.error) {
        int loc = r.error->cursorpos > PREFIX_LEN ? r.error->cursorpos - 1 - PREFIX_LEN : -1;
        st = ex_err_at(err, HS_INVALID, e->text, loc, "%s", r.error->message ? r.error->message : "syntax error");
        pg_query_free_parse_result(r);
        goto done;
    }
    json_error_t je;
    root = r.parse_tree ? hs_json_loads(r.parse_tree, 0, &je) : NULL;
    pg_query_free_parse_result(r);
    if (!root) {
        st = hs_err_set(err, HS_INVALID, "expression nested too deeply");
        goto done;
    }
    json_t *where;
    if ((st = check_stmt(&b, root, &where)) != HS_OK)
        goto done;
    if ((st = exb_bind(&b, where, &e->root)) != HS_OK)
        goto done;
    if (filter) {
        ex_t t = e->root->type.t;
        if (t == EX_T_NULL || t == EX_T_UNKNOWN) {
            if ((st = exb_cast_to(&b, &e->root, exb_ty(EX_T_BOOL), true)) != HS_OK)
                goto done;
        } else if (t != EX_T_BOOL) {
            char b1[48];
            st = ex_err_at(err, HS_INVALID, e->text, e->root->loc,
                           "argument of WHERE must be type boolean, not type %s",
                           exb_tname(&e->root->type, b1));
            goto done;
        }
    }
    if (e->root->type.t == EX_T_OTHER) {
        st = ex_err_at(err, HS_UNSUPPORTED, e->text, e->root->loc,
                       "expressions cannot return nested columns");
        goto done;
    }
    st = make_root_type(e, err);
done:
    json_decref(root);
    hs_free(query);
    if (st != HS_OK) {
        ex_free(e);
        return st;
    }
    *out = e;
    return HS_OK;
}

hs_status ex_parse_filter(const char *text, const hs_field *schema, ex_expr **out, hs_error *err)
{
    return parse(text, schema, true, out, err);
}

hs_status ex_parse_scalar(const char *text, const hs_field *schema, ex_expr **out, hs_error *err)
{
    return parse(text, schema, false, out, err);
}

void ex_free(ex_expr *e)
{
    if (!e)
        return;
    hs_field_clear(&e->type_field);
    hs_arena_destroy(&e->arena);
    hs_free(e);
}
