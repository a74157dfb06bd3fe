/*
 * expr/pred.c - the simple filter language of the table API: a recursive
 * descent parser, negation pushdown, binding literals to column kinds, exact
 * evaluation over batches (three-valued logic) and "might match" evaluation
 * over statistics.  pred.h has the grammar and the value kinds.
 *
 * Evaluation keeps one byte per row and per node: 0 false, 1 true, 2 unknown
 * (a comparison with a null).  AND is the minimum in the order false <
 * unknown < true, OR the maximum; a row passes when the root is true.
 * Because NOT was pushed to the leaves during parsing, leaves are the only
 * places that produce unknown.
 */
#include "expr/pred.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/jsonl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* lexer                                                               */

typedef enum tok_kind {
    T_END = 0, T_IDENT, T_QIDENT, T_NUM, T_STR, T_OP, T_LP, T_RP, T_COMMA, T_DOT
} tok_kind;

typedef struct tok {
    tok_kind kind;
    const char *p;
    size_t n;
    size_t pos;
} tok;

typedef struct parser {
    const char *s;
    size_t len, pos;
    tok cur;
    hs_arena *arena;
    hs_error *err;
} parser;

static hs_status lex(parser *ps)
{
    const char *s = ps->s;
    while (ps->pos < ps->len && isspace((unsigned char)s[ps->pos]))
        ps->pos++;
    tok *t = &ps->cur;
    t->pos = ps->pos;
    t->p = s + ps->pos;
    t->n = 0;
    if (ps->pos >= ps->len) {
        t->kind = T_END;
        return HS_OK;
    }
    char c = s[ps->pos];
    size_t st = ps->pos;
    if (isalpha((unsigned char)c) || c == '_') {
        while (ps->pos < ps->len && (isalnum((unsigned char)s[ps->pos]) || s[ps->pos] == '_'))
            ps->pos++;
        t->kind = T_IDENT;
    } else if (isdigit((unsigned char)c) ||
               ((c == '-' || c == '+' || c == '.') && ps->pos + 1 < ps->len &&
                (isdigit((unsigned char)s[ps->pos + 1]) || s[ps->pos + 1] == '.'))) {
        ps->pos++;
        while (ps->pos < ps->len) {
            char d = s[ps->pos];
            if (isdigit((unsigned char)d) || d == '.')
                ps->pos++;
            else if ((d == 'e' || d == 'E') && ps->pos + 1 < ps->len) {
                ps->pos++;
                if (s[ps->pos] == '-' || s[ps->pos] == '+')
                    ps->pos++;
            } else
                break;
        }
        t->kind = T_NUM;
    } else if (c == '\'') {
        ps->pos++;
        for (;;) {
            if (ps->pos >= ps->len)
                return hs_err_set(ps->err, HS_INVALID,
                                  "filter: unterminated string starting at offset %zu", st);
            if (s[ps->pos] == '\'') {
                if (ps->pos + 1 < ps->len && s[ps->pos + 1] == '\'') {
                    ps->pos += 2;
                    continue;
                }
                ps->pos++;
                break;
            }
            ps->pos++;
        }
        t->kind = T_STR;
    } else if (c == '"' || c == '`') {
        ps->pos++;
        while (ps->pos < ps->len && s[ps->pos] != c)
            ps->pos++;
        if (ps->pos >= ps->len)
            return hs_err_set(ps->err, HS_INVALID,
                              "filter: unterminated quoted name starting at offset %zu", st);
        ps->pos++;
        t->kind = T_QIDENT;
    } else if (c == '(') {
        ps->pos++;
        t->kind = T_LP;
    } else if (c == ')') {
        ps->pos++;
        t->kind = T_RP;
    } else if (c == ',') {
        ps->pos++;
        t->kind = T_COMMA;
    } else if (c == '.') {
        ps->pos++;
        t->kind = T_DOT;
    } else if (c == '=' || c == '!' || c == '<' || c == '>') {
        ps->pos++;
        if (ps->pos < ps->len && (s[ps->pos] == '=' || (c == '<' && s[ps->pos] == '>')))
            ps->pos++;
        t->kind = T_OP;
        if (ps->pos - st == 1 && c == '!')
            return hs_err_set(ps->err, HS_INVALID, "filter: unexpected '!' at offset %zu", st);
    } else {
        return hs_err_set(ps->err, HS_INVALID, "filter: unexpected character '%c' at offset %zu",
                          c, st);
    }
    t->n = ps->pos - st;
    return HS_OK;
}

static bool tok_is_kw(const tok *t, const char *kw)
{
    return t->kind == T_IDENT && strlen(kw) == t->n && strncasecmp(t->p, kw, t->n) == 0;
}

static hs_status expect_fail(parser *ps, const char *what)
{
    if (ps->cur.kind == T_END)
        return hs_err_set(ps->err, HS_INVALID, "filter: expected %s at end of \"%s\"", what,
                          ps->s);
    return hs_err_set(ps->err, HS_INVALID, "filter: expected %s at offset %zu, got \"%.*s\"",
                      what, ps->cur.pos, (int)ps->cur.n, ps->cur.p);
}

static pr_expr *new_expr(parser *ps, pr_ekind k)
{
    pr_expr *e = hs_arena_calloc(ps->arena, 1, sizeof *e);
    if (e) {
        e->kind = k;
        e->field_id = -1;
    }
    return e;
}

static bool is_reserved(const tok *t)
{
    static const char *const kws[] = {"and", "or", "not", "in", "is", "null", "true", "false"};
    for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++)
        if (tok_is_kw(t, kws[i]))
            return true;
    return false;
}

/* col := name { '.' name } -> arena string "a.b". */
static hs_status parse_column(parser *ps, const char **out)
{
    hs_buf b = {0};
    hs_status st = HS_OK;
    for (;;) {
        if (ps->cur.kind == T_IDENT && !is_reserved(&ps->cur))
            st = hs_buf_append(&b, ps->cur.p, ps->cur.n);
        else if (ps->cur.kind == T_QIDENT)
            st = hs_buf_append(&b, ps->cur.p + 1, ps->cur.n - 2);
        else {
            hs_buf_free(&b);
            return expect_fail(ps, "a column name");
        }
        if (st != HS_OK)
            break;
        if ((st = lex(ps)) != HS_OK)
            break;
        if (ps->cur.kind != T_DOT)
            break;
        if ((st = hs_buf_append_byte(&b, '.')) != HS_OK || (st = lex(ps)) != HS_OK)
            break;
    }
    if (st == HS_OK) {
        *out = hs_arena_strndup(ps->arena, (const char *)b.data, b.len);
        if (!*out)
            st = hs_err_nomem(ps->err, b.len);
    } else if (st == HS_NOMEM) {
        hs_err_nomem(ps->err, b.len);
    }
    hs_buf_free(&b);
    return st;
}

static bool tok_is_literal(const tok *t)
{
    return t->kind == T_NUM || t->kind == T_STR || tok_is_kw(t, "true") || tok_is_kw(t, "false");
}

static hs_status parse_literal(parser *ps, pr_lit *lit)
{
    tok *t = &ps->cur;
    memset(lit, 0, sizeof *lit);
    if (t->kind == T_NUM) {
        char *txt = hs_arena_strndup(ps->arena, t->p, t->n);
        if (!txt)
            return hs_err_nomem(ps->err, t->n);
        lit->s = txt;
        lit->n = t->n;
        bool is_int = strpbrk(txt, ".eE") == NULL;
        char *end = NULL;
        if (is_int) {
            errno = 0;
            long long v = strtoll(txt, &end, 10);
            if (*end == '\0' && errno == 0) {
                lit->kind = PR_L_INT;
                lit->i = v;
                lit->f = (double)v;
                return lex(ps);
            }
        }
        double d = hs_strtod(txt, &end);
        if (*end != '\0')
            return hs_err_set(ps->err, HS_INVALID, "filter: bad number \"%s\" at offset %zu",
                              txt, t->pos);
        lit->kind = PR_L_FLOAT;
        lit->f = d;
        return lex(ps);
    }
    if (t->kind == T_STR) {
        char *txt = hs_arena_alloc(ps->arena, t->n);
        if (!txt)
            return hs_err_nomem(ps->err, t->n);
        size_t k = 0;
        for (size_t i = 1; i + 1 < t->n; i++) {
            txt[k++] = t->p[i];
            if (t->p[i] == '\'')
                i++; /* '' -> ' */
        }
        txt[k] = '\0';
        lit->kind = PR_L_STR;
        lit->s = txt;
        lit->n = k;
        return lex(ps);
    }
    if (tok_is_kw(t, "true") || tok_is_kw(t, "false")) {
        lit->kind = PR_L_BOOL;
        lit->i = tok_is_kw(t, "true");
        lit->f = (double)lit->i;
        return lex(ps);
    }
    if (tok_is_kw(t, "null"))
        return hs_err_set(ps->err, HS_INVALID,
                          "filter: comparison with NULL at offset %zu is never true; "
                          "use IS NULL or IS NOT NULL", t->pos);
    return expect_fail(ps, "a literal");
}

static hs_status parse_op(parser *ps, pr_op *op)
{
    const tok *t = &ps->cur;
    if (t->kind != T_OP)
        return expect_fail(ps, "a comparison operator");
    if ((t->n == 1 && t->p[0] == '=') || (t->n == 2 && memcmp(t->p, "==", 2) == 0))
        *op = PR_EQ;
    else if (t->n == 2 && (memcmp(t->p, "!=", 2) == 0 || memcmp(t->p, "<>", 2) == 0))
        *op = PR_NE;
    else if (t->n == 1 && t->p[0] == '<')
        *op = PR_LT;
    else if (t->n == 2 && memcmp(t->p, "<=", 2) == 0)
        *op = PR_LE;
    else if (t->n == 1 && t->p[0] == '>')
        *op = PR_GT;
    else if (t->n == 2 && memcmp(t->p, ">=", 2) == 0)
        *op = PR_GE;
    else
        return expect_fail(ps, "a comparison operator");
    return lex(ps);
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

static hs_status parse_or(parser *ps, pr_expr **out, int depth);

static hs_status parse_in_list(parser *ps, pr_expr *e)
{
    if (ps->cur.kind != T_LP)
        return expect_fail(ps, "'(' after IN");
    HS_TRY(lex(ps));
    hs_buf lits = {0};
    hs_status st = HS_OK;
    for (;;) {
        pr_lit lit;
        if ((st = parse_literal(ps, &lit)) != HS_OK)
            break;
        if ((st = hs_buf_append(&lits, &lit, sizeof lit)) != HS_OK) {
            hs_err_nomem(ps->err, lits.len);
            break;
        }
        if (ps->cur.kind == T_COMMA) {
            if ((st = lex(ps)) != HS_OK)
                break;
            continue;
        }
        if (ps->cur.kind == T_RP) {
            st = lex(ps);
            break;
        }
        st = expect_fail(ps, "',' or ')' in the IN list");
        break;
    }
    if (st == HS_OK) {
        e->n_lits = (int)(lits.len / sizeof(pr_lit));
        e->lits = hs_arena_alloc(ps->arena, lits.len);
        if (!e->lits)
            st = hs_err_nomem(ps->err, lits.len);
        else
            memcpy(e->lits, lits.data, lits.len);
    }
    hs_buf_free(&lits);
    return st;
}

static hs_status parse_pred(parser *ps, pr_expr **out)
{
    pr_expr *e = new_expr(ps, PR_E_CMP);
    if (!e)
        return hs_err_nomem(ps->err, sizeof *e);
    *out = e;
    if (tok_is_literal(&ps->cur) && !tok_is_kw(&ps->cur, "true") && !tok_is_kw(&ps->cur, "false")) {
        /* lit op col */
        e->lits = hs_arena_calloc(ps->arena, 1, sizeof(pr_lit));
        if (!e->lits)
            return hs_err_nomem(ps->err, sizeof(pr_lit));
        e->n_lits = 1;
        HS_TRY(parse_literal(ps, &e->lits[0]));
        HS_TRY(parse_op(ps, &e->op));
        e->op = flip_op(e->op);
        return parse_column(ps, &e->column);
    }
    if (tok_is_kw(&ps->cur, "true") || tok_is_kw(&ps->cur, "false")) {
        e->kind = tok_is_kw(&ps->cur, "true") ? PR_E_TRUE : PR_E_FALSE;
        return lex(ps);
    }
    HS_TRY(parse_column(ps, &e->column));
    if (tok_is_kw(&ps->cur, "is")) {
        HS_TRY(lex(ps));
        bool neg = false;
        if (tok_is_kw(&ps->cur, "not")) {
            neg = true;
            HS_TRY(lex(ps));
        }
        if (!tok_is_kw(&ps->cur, "null"))
            return expect_fail(ps, "NULL after IS");
        e->kind = neg ? PR_E_NOT_NULL : PR_E_IS_NULL;
        return lex(ps);
    }
    if (tok_is_kw(&ps->cur, "not")) {
        HS_TRY(lex(ps));
        if (!tok_is_kw(&ps->cur, "in"))
            return expect_fail(ps, "IN after NOT");
        HS_TRY(lex(ps));
        e->kind = PR_E_NOT_IN;
        return parse_in_list(ps, e);
    }
    if (tok_is_kw(&ps->cur, "in")) {
        HS_TRY(lex(ps));
        e->kind = PR_E_IN;
        return parse_in_list(ps, e);
    }
    HS_TRY(parse_op(ps, &e->op));
    e->lits = hs_arena_calloc(ps->arena, 1, sizeof(pr_lit));
    if (!e->lits)
        return hs_err_nomem(ps->err, sizeof(pr_lit));
    e->n_lits = 1;
    return parse_literal(ps, &e->lits[0]);
}

static hs_status parse_unary(parser *ps, pr_expr **out, int depth)
{
    if (depth > 200)
        return hs_err_set(ps->err, HS_INVALID, "filter: nested too deeply");
    if (tok_is_kw(&ps->cur, "not")) {
        HS_TRY(lex(ps));
        pr_expr *e = new_expr(ps, PR_E_NOT);
        if (!e)
            return hs_err_nomem(ps->err, sizeof *e);
        *out = e;
        return parse_unary(ps, &e->l, depth + 1);
    }
    if (ps->cur.kind == T_LP) {
        HS_TRY(lex(ps));
        HS_TRY(parse_or(ps, out, depth + 1));
        if (ps->cur.kind != T_RP)
            return expect_fail(ps, "')'");
        return lex(ps);
    }
    return parse_pred(ps, out);
}

static hs_status parse_and(parser *ps, pr_expr **out, int depth)
{
    HS_TRY(parse_unary(ps, out, depth));
    while (tok_is_kw(&ps->cur, "and")) {
        HS_TRY(lex(ps));
        pr_expr *e = new_expr(ps, PR_E_AND);
        if (!e)
            return hs_err_nomem(ps->err, sizeof *e);
        e->l = *out;
        *out = e;
        HS_TRY(parse_unary(ps, &e->r, depth));
    }
    return HS_OK;
}

static hs_status parse_or(parser *ps, pr_expr **out, int depth)
{
    HS_TRY(parse_and(ps, out, depth));
    while (tok_is_kw(&ps->cur, "or")) {
        HS_TRY(lex(ps));
        pr_expr *e = new_expr(ps, PR_E_OR);
        if (!e)
            return hs_err_nomem(ps->err, sizeof *e);
        e->l = *out;
        *out = e;
        HS_TRY(parse_and(ps, &e->r, depth));
    }
    return HS_OK;
}

/* Negation normal form: removes NOT nodes.  neg = an odd number of NOTs above. */
static pr_expr *nnf(pr_expr *e, bool neg)
{
    switch (e->kind) {
    case PR_E_NOT:
        return nnf(e->l, !neg);
    case PR_E_AND:
    case PR_E_OR:
        e->l = nnf(e->l, neg);
        e->r = nnf(e->r, neg);
        if (neg)
            e->kind = e->kind == PR_E_AND ? PR_E_OR : PR_E_AND;
        return e;
    default:
        break;
    }
    if (!neg)
        return e;
    switch (e->kind) {
    case PR_E_TRUE: e->kind = PR_E_FALSE; break;
    case PR_E_FALSE: e->kind = PR_E_TRUE; break;
    case PR_E_IN: e->kind = PR_E_NOT_IN; break;
    case PR_E_NOT_IN: e->kind = PR_E_IN; break;
    case PR_E_IS_NULL: e->kind = PR_E_NOT_NULL; break;
    case PR_E_NOT_NULL: e->kind = PR_E_IS_NULL; break;
    case PR_E_CMP:
        switch (e->op) {
        case PR_EQ: e->op = PR_NE; break;
        case PR_NE: e->op = PR_EQ; break;
        case PR_LT: e->op = PR_GE; break;
        case PR_LE: e->op = PR_GT; break;
        case PR_GT: e->op = PR_LE; break;
        case PR_GE: e->op = PR_LT; break;
        }
        break;
    default:
        break;
    }
    return e;
}

hs_status pr_filter_parse(const char *text, pr_filter **out, hs_error *err)
{
    *out = NULL;
    pr_filter *f = hs_calloc(1, sizeof *f);
    if (!f)
        return hs_err_nomem(err, sizeof *f);
    parser ps = {.s = text ? text : "", .len = text ? strlen(text) : 0, .arena = &f->arena,
                 .err = err};
    hs_status st = lex(&ps);
    if (st == HS_OK && ps.cur.kind == T_END) {
        f->root = new_expr(&ps, PR_E_TRUE);
        if (!f->root)
            st = hs_err_nomem(err, sizeof(pr_expr));
    } else if (st == HS_OK) {
        st = parse_or(&ps, &f->root, 0);
        if (st == HS_OK && ps.cur.kind != T_END)
            st = expect_fail(&ps, "AND, OR or the end of the filter");
    }
    if (st != HS_OK) {
        pr_filter_free(f);
        return st;
    }
    f->root = nnf(f->root, false);
    *out = f;
    return HS_OK;
}

void pr_filter_free(pr_filter *f)
{
    if (!f)
        return;
    hs_arena_destroy(&f->arena);
    hs_free(f);
}

bool pr_filter_is_true(const pr_filter *f) { return !f || f->root->kind == PR_E_TRUE; }

/* ------------------------------------------------------------------ */
/* values                                                              */

pr_vkind pr_kind_of(const hs_field *f)
{
    switch (f->type) {
    case HS_TYPE_BOOL: case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32:
    case HS_TYPE_INT64: case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32:
    case HS_TYPE_UINT64: case HS_TYPE_DATE32: case HS_TYPE_TIME32: case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP:
        return PR_V_I64;
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64:
        return PR_V_F64;
    case HS_TYPE_DECIMAL128:
        return PR_V_I128;
    case HS_TYPE_STRING: case HS_TYPE_BINARY: case HS_TYPE_FIXED_BINARY:
        return PR_V_BYTES;
    default:
        return PR_V_NULL;
    }
}

bool pr_val_get(const hs_field *f, const hs_column *c, int64_t row, pr_val *v)
{
    if (!hs_col_is_valid(c, row))
        return false;
    const uint8_t *d = c->values.data;
    switch (c->type) {
    case HS_TYPE_BOOL: v->kind = PR_V_I64; v->i = hs_bit_get(d, row); return true;
    case HS_TYPE_INT8: v->kind = PR_V_I64; v->i = ((const int8_t *)d)[row]; return true;
    case HS_TYPE_INT16: v->kind = PR_V_I64; v->i = ((const int16_t *)d)[row]; return true;
    case HS_TYPE_INT32: case HS_TYPE_DATE32: case HS_TYPE_TIME32:
        v->kind = PR_V_I64; v->i = ((const int32_t *)d)[row]; return true;
    case HS_TYPE_INT64: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP: case HS_TYPE_UINT64:
        v->kind = PR_V_I64; v->i = ((const int64_t *)d)[row]; return true;
    case HS_TYPE_UINT8: v->kind = PR_V_I64; v->i = d[row]; return true;
    case HS_TYPE_UINT16: v->kind = PR_V_I64; v->i = ((const uint16_t *)d)[row]; return true;
    case HS_TYPE_UINT32: v->kind = PR_V_I64; v->i = ((const uint32_t *)d)[row]; return true;
    case HS_TYPE_FLOAT16:
        v->kind = PR_V_F64; v->f = hs_half_to_float(((const uint16_t *)d)[row]); return true;
    case HS_TYPE_FLOAT32: v->kind = PR_V_F64; v->f = ((const float *)d)[row]; return true;
    case HS_TYPE_FLOAT64: v->kind = PR_V_F64; v->f = ((const double *)d)[row]; return true;
    case HS_TYPE_DECIMAL128: {
        __int128 x;
        memcpy(&x, d + 16 * row, 16);
        v->kind = PR_V_I128;
        v->d = x;
        v->scale = f ? f->scale : 0;
        return true;
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *o = HS_COL_OFFSETS(c);
        v->kind = PR_V_BYTES;
        v->n = (size_t)(o[row + 1] - o[row]);
        /* a column of only empty strings may have no values buffer */
        v->p = d ? d + o[row] : (const uint8_t *)"";
        return true;
    }
    case HS_TYPE_FIXED_BINARY:
        v->kind = PR_V_BYTES;
        v->p = d ? d + (size_t)c->width * row : (const uint8_t *)"";
        v->n = d ? (size_t)c->width : 0;
        return true;
    default:
        return false;
    }
}

static double i128_to_double(__int128 d, int32_t scale)
{
    double x = (double)d;
    for (int32_t k = 0; k < scale; k++)
        x /= 10.0;
    for (int32_t k = scale; k < 0; k++)
        x *= 10.0;
    return x;
}

int pr_val_cmp(const pr_val *a, const pr_val *b)
{
    if (a->kind == b->kind) {
        switch (a->kind) {
        case PR_V_I64: return a->i < b->i ? -1 : a->i > b->i;
        case PR_V_F64: return pr_cmp_f64(a->f, b->f);
        case PR_V_I128:
            if (a->scale == b->scale)
                return a->d < b->d ? -1 : a->d > b->d;
            return pr_cmp_f64(i128_to_double(a->d, a->scale), i128_to_double(b->d, b->scale));
        case PR_V_BYTES: {
            size_t n = a->n < b->n ? a->n : b->n;
            int c = n ? memcmp(a->p, b->p, n) : 0;
            if (c)
                return c < 0 ? -1 : 1;
            return a->n < b->n ? -1 : a->n > b->n;
        }
        default: return 0;
        }
    }
    if (a->kind == PR_V_I64 && b->kind == PR_V_F64)
        return pr_cmp_i64_f64(a->i, b->f);
    if (a->kind == PR_V_F64 && b->kind == PR_V_I64)
        return -pr_cmp_i64_f64(b->i, a->f);
    double x = a->kind == PR_V_I64 ? (double)a->i : a->kind == PR_V_F64 ? a->f
             : a->kind == PR_V_I128 ? i128_to_double(a->d, a->scale) : 0;
    double y = b->kind == PR_V_I64 ? (double)b->i : b->kind == PR_V_F64 ? b->f
             : b->kind == PR_V_I128 ? i128_to_double(b->d, b->scale) : 0;
    return pr_cmp_f64(x, y);
}

static uint64_t rd_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

bool pr_val_from_bound(const hs_field *f, const uint8_t *p, size_t n, pr_val *v)
{
    memset(v, 0, sizeof *v);
    switch (f->type) {
    case HS_TYPE_BOOL:
        if (n != 1) return false;
        v->kind = PR_V_I64; v->i = p[0] != 0; return true;
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_DATE32:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_TIME32:
        if (n == 4) { v->kind = PR_V_I64; v->i = (int32_t)(uint32_t)rd_le(p, 4); return true; }
        if (n == 8) { v->kind = PR_V_I64; v->i = (int64_t)rd_le(p, 8); return true; }
        return false;
    case HS_TYPE_INT64: case HS_TYPE_UINT32: case HS_TYPE_UINT64: case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP:
        /* after int -> long promotion, old files carry 4-byte bounds */
        if (n == 8) { v->kind = PR_V_I64; v->i = (int64_t)rd_le(p, 8); return true; }
        if (n == 4) { v->kind = PR_V_I64; v->i = (int32_t)(uint32_t)rd_le(p, 4); return true; }
        return false;
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64:
        if (n == 4) {
            uint32_t u = (uint32_t)rd_le(p, 4);
            float x;
            memcpy(&x, &u, 4);
            v->kind = PR_V_F64; v->f = x; return true;
        }
        if (n == 8) {
            uint64_t u = rd_le(p, 8);
            double x;
            memcpy(&x, &u, 8);
            v->kind = PR_V_F64; v->f = x; return true;
        }
        return false;
    case HS_TYPE_DECIMAL128: {
        if (n == 0 || n > 16) return false;
        __int128 x = (p[0] & 0x80) ? -1 : 0;
        for (size_t k = 0; k < n; k++)
            x = (__int128)(((unsigned __int128)x << 8) | p[k]);
        v->kind = PR_V_I128; v->d = x; v->scale = f->scale; return true;
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: case HS_TYPE_FIXED_BINARY:
        v->kind = PR_V_BYTES; v->p = p; v->n = n; return true;
    default:
        return false;
    }
}

hs_status pr_val_to_bound(const hs_field *f, const pr_val *v, hs_buf *out)
{
    switch (f->type) {
    case HS_TYPE_BOOL:
        return hs_buf_append_byte(out, v->i != 0);
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_DATE32:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_TIME32:
        return hs_buf_put_u32le(out, (uint32_t)(int32_t)v->i);
    case HS_TYPE_INT64: case HS_TYPE_UINT32: case HS_TYPE_UINT64: case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP:
        return hs_buf_put_u64le(out, (uint64_t)v->i);
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: {
        float x = (float)v->f;
        uint32_t u;
        memcpy(&u, &x, 4);
        return hs_buf_put_u32le(out, u);
    }
    case HS_TYPE_FLOAT64: {
        uint64_t u;
        memcpy(&u, &v->f, 8);
        return hs_buf_put_u64le(out, u);
    }
    case HS_TYPE_DECIMAL128: {
        uint8_t be[16];
        unsigned __int128 u = (unsigned __int128)v->d;
        for (int k = 15; k >= 0; k--) {
            be[k] = (uint8_t)u;
            u >>= 8;
        }
        int start = 0; /* minimal two's complement */
        while (start < 15 && ((be[start] == 0 && !(be[start + 1] & 0x80)) ||
                              (be[start] == 0xff && (be[start + 1] & 0x80))))
            start++;
        return hs_buf_append(out, be + start, 16 - start);
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: case HS_TYPE_FIXED_BINARY:
        return hs_buf_append(out, v->p, v->n);
    default:
        return HS_INVALID;
    }
}

/* ------------------------------------------------------------------ */
/* date and time text                                                  */

static bool digits(const char *s, size_t n, size_t *i, int count, int64_t *out)
{
    int64_t v = 0;
    for (int k = 0; k < count; k++) {
        if (*i >= n || !isdigit((unsigned char)s[*i]))
            return false;
        v = v * 10 + (s[(*i)++] - '0');
    }
    *out = v;
    return true;
}

static bool parse_date_at(const char *s, size_t n, size_t *i, int64_t *days)
{
    int64_t y, m, d;
    bool neg = false;
    if (*i < n && (s[*i] == '-' || s[*i] == '+'))
        neg = s[(*i)++] == '-';
    if (!digits(s, n, i, 4, &y))
        return false;
    int extra = 0;
    while (*i < n && isdigit((unsigned char)s[*i])) {
        if (++extra > 3)       /* years beyond 9,999,999 fit no column type */
            return false;
        y = y * 10 + (s[(*i)++] - '0');
    }
    if (*i >= n || s[(*i)++] != '-' || !digits(s, n, i, 2, &m) || *i >= n || s[(*i)++] != '-' ||
        !digits(s, n, i, 2, &d))
        return false;
    if (m < 1 || m > 12 || d < 1 || d > 31)
        return false;
    *days = hs_days_from_civil(neg ? -y : y, (unsigned)m, (unsigned)d);
    return true;
}

bool pr_parse_date(const char *s, size_t n, int64_t *days)
{
    size_t i = 0;
    return parse_date_at(s, n, &i, days) && i == n;
}

/* HH:MM[:SS[.fffffffff]] -> nanoseconds of the day. */
static bool parse_time_at(const char *s, size_t n, size_t *i, int64_t *nanos)
{
    int64_t h, mi, sec = 0, frac = 0;
    if (!digits(s, n, i, 2, &h) || *i >= n || s[(*i)++] != ':' || !digits(s, n, i, 2, &mi))
        return false;
    if (*i < n && s[*i] == ':') {
        (*i)++;
        if (!digits(s, n, i, 2, &sec))
            return false;
        if (*i < n && s[*i] == '.') {
            (*i)++;
            int nd = 0;
            while (*i < n && isdigit((unsigned char)s[*i])) {
                if (nd < 9) {
                    frac = frac * 10 + (s[*i] - '0');
                    nd++;
                }
                (*i)++;
            }
            if (nd == 0)
                return false;
            for (; nd < 9; nd++)
                frac *= 10;
        }
    }
    if (h > 23 || mi > 59 || sec > 60)
        return false;
    *nanos = ((h * 60 + mi) * 60 + sec) * 1000000000LL + frac;
    return true;
}

static int64_t nanos_to_unit(int64_t ns, hs_time_unit unit)
{
    static const int64_t div[] = {1000000000LL, 1000000LL, 1000LL, 1LL};
    int64_t d = div[unit];
    int64_t q = ns / d;
    if (ns % d != 0 && ns < 0)
        q--;
    return q;
}

bool pr_parse_time(const char *s, size_t n, hs_time_unit unit, int64_t *out)
{
    size_t i = 0;
    int64_t ns;
    if (!parse_time_at(s, n, &i, &ns) || i != n)
        return false;
    *out = nanos_to_unit(ns, unit);
    return true;
}

bool pr_parse_timestamp(const char *s, size_t n, hs_time_unit unit, int64_t *out)
{
    size_t i = 0;
    int64_t days, ns = 0;
    if (!parse_date_at(s, n, &i, &days))
        return false;
    if (i < n && (s[i] == 'T' || s[i] == 't' || s[i] == ' ')) {
        i++;
        if (!parse_time_at(s, n, &i, &ns))
            return false;
    }
    int64_t off_min = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        bool neg = s[i++] == '-';
        int64_t oh, om = 0;
        if (!digits(s, n, &i, 2, &oh))
            return false;
        if (i < n && s[i] == ':')
            i++;
        if (i < n && !digits(s, n, &i, 2, &om))
            return false;
        off_min = (oh * 60 + om) * (neg ? -1 : 1);
    }
    if (i != n)
        return false;
    /* whole seconds and the fraction separately, to stay inside int64 for ns */
    int64_t secs = days * 86400 + ns / 1000000000LL - off_min * 60;
    int64_t frac = ns % 1000000000LL;
    int64_t scale = unit == HS_UNIT_SECOND ? 1 : unit == HS_UNIT_MILLI ? 1000
                  : unit == HS_UNIT_MICRO ? 1000000 : 1000000000LL;
    int64_t part = unit == HS_UNIT_SECOND ? 0 : unit == HS_UNIT_MILLI ? frac / 1000000
                 : unit == HS_UNIT_MICRO ? frac / 1000 : frac;
    int64_t v;
    if (__builtin_mul_overflow(secs, scale, &v) || __builtin_add_overflow(v, part, &v))
        return false;   /* out of the unit's range */
    *out = v;
    return true;
}

/* Decimal text -> unscaled value at `scale`; false when it does not fit exactly. */
static bool parse_decimal(const char *s, size_t n, int32_t scale, __int128 *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    __int128 v = 0;
    int frac_digits = -1;
    bool any = false;
    for (; i < n; i++) {
        if (s[i] == '.' && frac_digits < 0) {
            frac_digits = 0;
            continue;
        }
        if (!isdigit((unsigned char)s[i]))
            return false;
        if (frac_digits >= 0) {
            if (frac_digits >= scale) {
                if (s[i] != '0')
                    return false;
                continue;
            }
            frac_digits++;
        }
        if (v > ((__int128)1 << 120))
            return false;
        v = v * 10 + (s[i] - '0');
        any = true;
    }
    if (!any)
        return false;
    for (int k = frac_digits < 0 ? 0 : frac_digits; k < scale; k++)
        v *= 10;
    *out = neg ? -v : v;
    return true;
}

/* ------------------------------------------------------------------ */
/* binding                                                             */

static const hs_field *find_path(const hs_field *schema, const char *path, bool ci)
{
    const hs_field *cur = schema;
    const char *p = path;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        const hs_field *next = NULL;
        if (cur->type != HS_TYPE_STRUCT)
            return NULL;
        for (int i = 0; i < cur->n_children && !next; i++) {
            const char *nm = cur->children[i].name;
            if (strlen(nm) == len && (ci ? strncasecmp(nm, p, len) : strncmp(nm, p, len)) == 0)
                next = &cur->children[i];
        }
        if (!next)
            return NULL;
        cur = next;
        p = dot ? dot + 1 : p + len;
    }
    return cur == schema ? NULL : cur;
}

static hs_status bind_lit(const pr_expr *e, const pr_lit *l, const hs_field *f, pr_val *v,
                          hs_arena *arena, hs_error *err)
{
    memset(v, 0, sizeof *v);
    pr_vkind k = pr_kind_of(f);
    const char *what = l->kind == PR_L_STR ? "string" : l->kind == PR_L_BOOL ? "boolean"
                     : "number";
    switch (k) {
    case PR_V_I64:
        if (f->type == HS_TYPE_BOOL) {
            if (l->kind != PR_L_BOOL)
                break;
            v->kind = PR_V_I64;
            v->i = l->i;
            return HS_OK;
        }
        if (l->kind == PR_L_INT) {
            v->kind = PR_V_I64;
            v->i = l->i;
            return HS_OK;
        }
        if (l->kind == PR_L_FLOAT) {
            v->kind = PR_V_F64;
            v->f = l->f;
            return HS_OK;
        }
        if (l->kind == PR_L_STR) {
            bool ok = false;
            if (f->type == HS_TYPE_DATE32)
                ok = pr_parse_date(l->s, l->n, &v->i);
            else if (f->type == HS_TYPE_TIMESTAMP)
                ok = pr_parse_timestamp(l->s, l->n, f->unit, &v->i);
            else if (f->type == HS_TYPE_TIME32 || f->type == HS_TYPE_TIME64)
                ok = pr_parse_time(l->s, l->n, f->unit, &v->i);
            if (ok) {
                v->kind = PR_V_I64;
                return HS_OK;
            }
        }
        break;
    case PR_V_F64:
        if (l->kind == PR_L_INT || l->kind == PR_L_FLOAT) {
            v->kind = PR_V_F64;
            v->f = l->f;
            return HS_OK;
        }
        if (l->kind == PR_L_STR && l->n < 16 &&
            (strcasecmp(l->s, "nan") == 0 || strcasecmp(l->s, "infinity") == 0 ||
             strcasecmp(l->s, "-infinity") == 0 || strcasecmp(l->s, "inf") == 0 ||
             strcasecmp(l->s, "-inf") == 0)) {
            v->kind = PR_V_F64;
            v->f = hs_strtod(l->s, NULL);
            return HS_OK;
        }
        break;
    case PR_V_I128:
        if (l->kind == PR_L_INT || l->kind == PR_L_FLOAT || l->kind == PR_L_STR) {
            if (parse_decimal(l->s, l->n, f->scale, &v->d)) {
                v->kind = PR_V_I128;
                v->scale = f->scale;
                return HS_OK;
            }
            if (l->kind != PR_L_STR) {
                v->kind = PR_V_F64;
                v->f = l->f;
                return HS_OK;
            }
        }
        break;
    case PR_V_BYTES:
        if (l->kind != PR_L_STR)
            break;
        if (f->type == HS_TYPE_FIXED_BINARY && f->ext == HS_EXT_UUID && f->width == 16) {
            uint8_t *u = hs_arena_alloc(arena, 16);
            if (!u)
                return hs_err_nomem(err, 16);
            if (!hs_uuid_parse(l->s, l->n, u))
                break;
            v->kind = PR_V_BYTES;
            v->p = u;
            v->n = 16;
            return HS_OK;
        }
        v->kind = PR_V_BYTES;
        v->p = (const uint8_t *)l->s;
        v->n = l->n;
        return HS_OK;
    default:
        return hs_err_set(err, HS_INVALID, "filter: column \"%s\" has type %s, which filters "
                          "cannot compare", e->column, hs_type_name(f->type));
    }
    return hs_err_set(err, HS_INVALID, "filter: column \"%s\" has type %s; the %s literal "
                      "\"%.*s\" does not fit it", e->column, hs_type_name(f->type), what,
                      (int)(l->n > 64 ? 64 : l->n), l->s ? l->s : (l->i ? "true" : "false"));
}

static hs_status bind_expr(pr_expr *e, const hs_field *schema, hs_arena *arena, hs_error *err)
{
    if (e->kind == PR_E_AND || e->kind == PR_E_OR) {
        HS_TRY(bind_expr(e->l, schema, arena, err));
        return bind_expr(e->r, schema, arena, err);
    }
    if (e->kind == PR_E_TRUE || e->kind == PR_E_FALSE)
        return HS_OK;
    const hs_field *f = find_path(schema, e->column, false);
    if (!f)
        f = find_path(schema, e->column, true);
    if (!f)
        return hs_err_set(err, HS_NOT_FOUND, "filter: no column \"%s\" in the table schema",
                          e->column);
    e->field = f;
    e->field_id = f->field_id;
    if (e->kind == PR_E_IS_NULL || e->kind == PR_E_NOT_NULL)
        return HS_OK;
    if (pr_kind_of(f) == PR_V_NULL)
        return hs_err_set(err, HS_INVALID, "filter: column \"%s\" has type %s, which filters "
                          "cannot compare", e->column, hs_type_name(f->type));
    e->vals = hs_arena_calloc(arena, (size_t)e->n_lits, sizeof(pr_val));
    if (!e->vals)
        return hs_err_nomem(err, sizeof(pr_val));
    for (int i = 0; i < e->n_lits; i++)
        HS_TRY(bind_lit(e, &e->lits[i], f, &e->vals[i], arena, err));
    return HS_OK;
}

hs_status pr_filter_bind(pr_filter *f, const hs_field *schema, hs_error *err)
{
    HS_TRY(bind_expr(f->root, schema, &f->arena, err));
    f->bound = true;
    return HS_OK;
}

static hs_status collect_ids(const pr_expr *e, hs_buf *ids)
{
    if (e->kind == PR_E_AND || e->kind == PR_E_OR) {
        HS_TRY(collect_ids(e->l, ids));
        return collect_ids(e->r, ids);
    }
    if (e->kind == PR_E_TRUE || e->kind == PR_E_FALSE)
        return HS_OK;
    for (size_t i = 0; i < HS_VEC_LEN(ids, int32_t); i++)
        if (HS_VEC_AT(ids, int32_t, i) == e->field_id)
            return HS_OK;
    return HS_VEC_PUSH(ids, int32_t, e->field_id);
}

hs_status pr_filter_field_ids(const pr_filter *f, hs_buf *ids)
{
    return f ? collect_ids(f->root, ids) : HS_OK;
}

/* ------------------------------------------------------------------ */
/* evaluation over batches                                             */

static bool find_id_rec(const hs_field *f, const hs_column *c, int32_t id, pr_col_ref *r,
                        int depth)
{
    for (int i = 0; i < f->n_children && i < c->n_children; i++) {
        const hs_field *cf = &f->children[i];
        const hs_column *cc = c->children[i];
        if (cf->field_id == id) {
            r->col = cc;
            r->field = cf;
            return true;
        }
        if (cf->type == HS_TYPE_STRUCT && depth < 8) {
            r->parents[r->n_parents++] = cc;
            if (find_id_rec(cf, cc, id, r, depth + 1))
                return true;
            r->n_parents--;
        }
    }
    return false;
}

bool pr_batch_find_id(const hs_batch *b, int32_t field_id, pr_col_ref *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < b->n_cols && i < b->schema.n_children; i++) {
        const hs_field *cf = &b->schema.children[i];
        if (cf->field_id == field_id) {
            out->col = b->cols[i];
            out->field = cf;
            return true;
        }
        if (cf->type == HS_TYPE_STRUCT) {
            out->n_parents = 1;
            out->parents[0] = b->cols[i];
            if (find_id_rec(cf, b->cols[i], field_id, out, 1))
                return true;
            out->n_parents = 0;
        }
    }
    return false;
}

static uint8_t cmp_result(pr_op op, int c)
{
    switch (op) {
    case PR_EQ: return c == 0;
    case PR_NE: return c != 0;
    case PR_LT: return c < 0;
    case PR_LE: return c <= 0;
    case PR_GT: return c > 0;
    case PR_GE: return c >= 0;
    }
    return 0;
}

/* NaN never equals or orders against anything (IEEE), except != */
static uint8_t cmp_val(pr_op op, const pr_val *a, const pr_val *b)
{
    if ((a->kind == PR_V_F64 && isnan(a->f)) || (b->kind == PR_V_F64 && isnan(b->f))) {
        bool both = a->kind == PR_V_F64 && isnan(a->f) && b->kind == PR_V_F64 && isnan(b->f);
        if (both) /* 'NaN' literal: equality matches NaN, as Iceberg's is_nan */
            return op == PR_EQ || op == PR_LE || op == PR_GE;
        return op == PR_NE;
    }
    return cmp_result(op, pr_val_cmp(a, b));
}

static void eval_leaf(const pr_expr *e, const hs_batch *b, uint8_t *t)
{
    int64_t n = b->n_rows;
    pr_col_ref ref;
    bool have = pr_batch_find_id(b, e->field_id, &ref);
    if (e->kind == PR_E_IS_NULL || e->kind == PR_E_NOT_NULL) {
        uint8_t when_null = e->kind == PR_E_IS_NULL;
        for (int64_t i = 0; i < n; i++)
            t[i] = (!have || !pr_ref_valid(&ref, i)) ? when_null : !when_null;
        return;
    }
    if (!have || pr_kind_of(ref.field) == PR_V_NULL) {
        memset(t, 2, (size_t)n);
        return;
    }
    pr_val v;
    for (int64_t i = 0; i < n; i++) {
        if (!pr_ref_valid(&ref, i) || !pr_val_get(ref.field, ref.col, i, &v)) {
            t[i] = 2;
            continue;
        }
        if (e->kind == PR_E_CMP) {
            t[i] = cmp_val(e->op, &v, &e->vals[0]);
        } else {
            uint8_t hit = 0;
            for (int k = 0; k < e->n_lits && !hit; k++)
                hit = cmp_val(PR_EQ, &v, &e->vals[k]);
            t[i] = e->kind == PR_E_IN ? hit : !hit;
        }
    }
}

static hs_status eval_node(const pr_expr *e, const hs_batch *b, uint8_t *t, hs_error *err)
{
    int64_t n = b->n_rows;
    switch (e->kind) {
    case PR_E_TRUE: memset(t, 1, (size_t)n); return HS_OK;
    case PR_E_FALSE: memset(t, 0, (size_t)n); return HS_OK;
    case PR_E_AND:
    case PR_E_OR: {
        HS_TRY(eval_node(e->l, b, t, err));
        uint8_t *u = hs_malloc((size_t)n + 1);
        if (!u)
            return hs_err_nomem(err, (size_t)n);
        hs_status st = eval_node(e->r, b, u, err);
        if (st == HS_OK) {
            /* order false(0) < unknown(2) < true(1): map to 0,1,2 rank */
            static const uint8_t rank[3] = {0, 2, 1}, unrank[3] = {0, 2, 1};
            if (e->kind == PR_E_AND)
                for (int64_t i = 0; i < n; i++) {
                    uint8_t a = rank[t[i]], c = rank[u[i]];
                    t[i] = unrank[a < c ? a : c];
                }
            else
                for (int64_t i = 0; i < n; i++) {
                    uint8_t a = rank[t[i]], c = rank[u[i]];
                    t[i] = unrank[a > c ? a : c];
                }
        }
        hs_free(u);
        return st;
    }
    default:
        if (!e->field)
            return hs_err_set(err, HS_INTERNAL, "filter: evaluated before binding");
        eval_leaf(e, b, t);
        return HS_OK;
    }
}

hs_status pr_filter_eval(const pr_filter *f, const hs_batch *b, uint8_t *sel, int64_t *n_match,
                          hs_error *err)
{
    int64_t n = b->n_rows, m = 0;
    if (n == 0) {
        *n_match = 0;
        return HS_OK;
    }
    HS_TRY(eval_node(f->root, b, sel, err));
    for (int64_t i = 0; i < n; i++) {
        sel[i] = sel[i] == 1;
        m += sel[i];
    }
    *n_match = m;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* might-match over statistics                                         */

static bool leaf_might_match(const pr_expr *e, pr_stats_fn fn, void *ctx)
{
    pr_col_stats s;
    memset(&s, 0, sizeof s);
    s.value_count = s.null_count = s.nan_count = -1;
    if (!fn(ctx, e->field_id, e->field, &s))
        return true;
    bool all_null = s.value_count >= 0 && s.null_count >= 0 && s.null_count == s.value_count;
    switch (e->kind) {
    case PR_E_IS_NULL:
        return s.null_count != 0;
    case PR_E_NOT_NULL:
        return !all_null;
    case PR_E_NOT_IN:
        return !all_null;
    default:
        break;
    }
    if (all_null)
        return false;
    /* NaN sorts above every number and equals NaN (PostgreSQL, DuckDB), and
     * bounds never include NaN: a NaN literal is decided by nan_count (-1 =
     * unknown = may hold NaN). */
    bool may_nan = s.nan_count != 0;
    if (e->kind == PR_E_CMP && e->n_lits > 0 && e->vals[0].kind == PR_V_F64 &&
        isnan(e->vals[0].f)) {
        switch (e->op) {
        case PR_EQ: case PR_GE: return may_nan;
        case PR_GT: return false;
        default: return true;   /* NE, LT, LE: any non-null value */
        }
    }
    if (e->kind == PR_E_IN)
        for (int k = 0; k < e->n_lits; k++)
            if (e->vals[k].kind == PR_V_F64 && isnan(e->vals[k].f) && may_nan)
                return true;
    const pr_val *lo = s.has_lower ? &s.lower : NULL, *hi = s.has_upper ? &s.upper : NULL;
    if (lo && lo->kind == PR_V_F64 && isnan(lo->f))
        lo = NULL;
    if (hi && hi->kind == PR_V_F64 && isnan(hi->f))
        hi = NULL;
    if (e->kind == PR_E_IN) {
        for (int k = 0; k < e->n_lits; k++) {
            const pr_val *v = &e->vals[k];
            if (v->kind == PR_V_F64 && isnan(v->f))
                continue;
            if ((!lo || pr_val_cmp(v, lo) >= 0) && (!hi || pr_val_cmp(v, hi) <= 0))
                return true;
        }
        return false;
    }
    const pr_val *v = &e->vals[0];
    switch (e->op) {
    case PR_EQ:
        return (!lo || pr_val_cmp(v, lo) >= 0) && (!hi || pr_val_cmp(v, hi) <= 0);
    case PR_NE:
        return true;
    case PR_LT:
        return !lo || pr_val_cmp(lo, v) < 0;
    case PR_LE:
        return !lo || pr_val_cmp(lo, v) <= 0;
    case PR_GT:
        return !hi || pr_val_cmp(hi, v) > 0;
    case PR_GE:
        return !hi || pr_val_cmp(hi, v) >= 0;
    }
    return true;
}

bool pr_expr_might_match(const pr_expr *e, pr_stats_fn fn, void *ctx)
{
    switch (e->kind) {
    case PR_E_TRUE: return true;
    case PR_E_FALSE: return false;
    case PR_E_AND: return pr_expr_might_match(e->l, fn, ctx) && pr_expr_might_match(e->r, fn, ctx);
    case PR_E_OR: return pr_expr_might_match(e->l, fn, ctx) || pr_expr_might_match(e->r, fn, ctx);
    case PR_E_NOT: return true;
    default:
        if (!e->field)
            return true;
        return leaf_might_match(e, fn, ctx);
    }
}
