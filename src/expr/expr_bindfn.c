/*
 * expr/expr_bindfn.c - binding of function calls: which names exist, how
 * many arguments each takes, and PostgreSQL 15's rules for their argument
 * and result types.
 *
 *   what                               here
 *   ---------------------------------  -------------------------------------------
 *   the function table                 exb_func: name -> ex_fn, argument counts;
 *                                      the functions below EX_FN_SIGN (strings,
 *                                      abs/round/floor/ceil/sqrt, date_part...)
 *   the functions from EX_FN_SIGN on   exb_func_more: sign, trunc, exp..radians,
 *                                      power, log, atan2, pi, mod, div, the
 *                                      expr_sqlfn.c functions, to_char, arrays
 *   regular expression operators       exb_regex_op (~ ~* !~ !~*)
 *   names PostgreSQL has, we do not    pg_builtins: 0A000 (not 42883)
 *
 * Each rule casts the arguments to the types the kernel expects (want_*:
 * unknown literals and NULL take the wanted type; other types must already
 * be it, or cast implicitly where PostgreSQL would), picks the result type,
 * and folds the call when every argument is a constant.  pgvector's
 * functions bind in expr_bind.c's pgvector section (exb_pv_func); the
 * kernels are expr_eval.c's, expr_num.c's, expr_strfn.c's and
 * expr_sqlfn.c's.
 */
#include "expr/expr_int.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static hs_status want_type(ex_binder *b, ex_node **np, ex_t t, const char *fn)
{
    ex_node *n = *np;
    if (n->type.t == t)
        return HS_OK;
    if (n->type.t == EX_T_NULL || n->type.t == EX_T_UNKNOWN)
        return exb_cast_to(b, np, exb_ty(t), true);
    char b1[48], b2[48];
    ex_ty w = exb_ty(t);
    return exb_err(b, HS_INVALID, n->loc, "function %s expects %s, not %s", fn, exb_tname(&w, b1),
                  exb_tname(&n->type, b2));
}

static hs_status want_int(ex_binder *b, ex_node **np, const char *fn)
{
    return want_type(b, np, EX_T_INT, fn);
}

/* Scalar functions of PostgreSQL 15 that this binder does not implement:
 * calling one is 0A000 feature_not_supported ("function replace is not
 * supported"), while a name PostgreSQL does not know either is 42883
 * undefined_function, as PostgreSQL reports it.  Names only (sorted). */
static const char *const pg_builtins[] = {
    "acos", "acosd", "acosh", "array_append", "array_cat",
    "array_fill", "array_length",
    "array_prepend", "array_to_json",
    "ascii", "asin", "asind", "asinh", "atan", "atan2",
    "atan2d", "atand", "atanh", "bit_count", "bit_length", "cardinality", "cbrt", "chr",
    "clock_timestamp", "coalesce", "concat_ws", "convert_from", "convert_to", "cos", "cosd",
    "cosh", "cot", "cotd", "current_date", "current_setting", "current_time",
    "current_timestamp", "date_bin", "decode", "degrees", "div", "encode", "exp",
    "factorial", "format", "gcd", "gen_random_uuid", "get_bit", "get_byte", "greatest",
    "initcap", "isfinite", "json_array_length", "json_build_array", "json_build_object",
    "json_extract_path", "json_extract_path_text", "json_object", "json_typeof",
    "jsonb_array_length", "jsonb_build_array", "jsonb_build_object", "jsonb_extract_path",
    "jsonb_extract_path_text", "jsonb_path_query", "jsonb_pretty", "jsonb_set",
    "jsonb_typeof", "lcm", "least",
    "left", "ln", "localtime", "localtimestamp", "log", "log10", "lpad", "make_date",
    "make_interval", "make_time", "make_timestamp", "make_timestamptz", "md5",
    "min_scale", "mod", "now", "nullif", "octet_length", "overlay", "pg_typeof", "pi",
    "position", "power", "quote_ident", "quote_literal", "quote_nullable", "radians",
    "random", "regexp_count", "regexp_instr", "regexp_like", "regexp_match",
    "regexp_matches", "regexp_replace", "regexp_split_to_array", "regexp_substr",
    "repeat", "replace", "reverse", "right", "rpad", "scale", "set_bit",
    "set_byte", "setseed", "sha224", "sha256", "sha384", "sha512", "sign", "sin", "sind",
    "sinh", "split_part", "statement_timestamp", "string_to_array", "strpos", "tan",
    "tand", "tanh", "timeofday", "to_ascii", "to_char", "to_date", "to_hex", "to_json",
    "to_jsonb", "to_number", "to_timestamp", "transaction_timestamp", "translate", "trim_scale",
    "trunc", "unistr", "unnest", "uuid_generate_v4", "version", "width_bucket",
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, *(const char *const *)b);
}

static bool pg_builtin_name(const char *fn)
{
    char low[64];
    size_t i = 0;
    for (; fn[i] && i < sizeof low - 1; i++)
        low[i] = (char)tolower((unsigned char)fn[i]);
    if (fn[i])
        return false;
    low[i] = 0;
    return bsearch(low, pg_builtins, sizeof pg_builtins / sizeof pg_builtins[0],
                   sizeof pg_builtins[0], cmp_name) != NULL;
}

/* The functions of expr_sqlfn.c and the numeric ones added with them
 * (PostgreSQL's argument and result types; docs/sql.md). */
static hs_status check_regex(ex_binder *b, ex_node *pat, ex_node *flags, bool ci, int loc)
{
    if (!exb_is_const(pat) || pat->val.null || (flags && (!exb_is_const(flags) || flags->val.null)))
        return HS_OK;
    char msg[256];
    ex_regex *r = NULL;
    hs_status st = ex_regex_compile(&pat->val.s, ci, flags ? &flags->val.s : NULL, &r, NULL, msg);
    ex_regex_free(r);
    if (st == HS_NOMEM)
        return exb_nomem(b);
    if (st != HS_OK)
        return exb_err(b, st, loc, "%s", msg);
    return HS_OK;
}

static hs_status want_float(ex_binder *b, ex_node **np, const char *fn)
{
    ex_node *n = *np;
    if (n->type.t == EX_T_UNKNOWN || n->type.t == EX_T_NULL)
        return exb_cast_to(b, np, exb_ty(EX_T_FLOAT), true);
    if (!exb_is_num(n->type.t)) {
        char b1[48];
        return exb_err(b, HS_NOT_FOUND, n->loc, "function %s(%s) does not exist", fn, exb_tname(&n->type, b1));
    }
    return exb_coerce(b, np, exb_ty(EX_T_FLOAT));
}

static hs_status want_dec(ex_binder *b, ex_node **np, const char *fn)
{
    ex_node *n = *np;
    if (n->type.t == EX_T_UNKNOWN || n->type.t == EX_T_NULL)
        return exb_cast_to(b, np, exb_dec_type(38 - 18, 18), true);
    if (n->type.t == EX_T_INT)
        return exb_cast_to(b, np, exb_dec_type(exb_int_digits(&n->type), 0), false);
    if (n->type.t != EX_T_DEC) {
        char b1[48];
        return exb_err(b, HS_NOT_FOUND, n->loc, "function %s(%s) does not exist", fn, exb_tname(&n->type, b1));
    }
    return HS_OK;
}

/* The type of exp/ln/log10 of a numeric (expr_eval.c numeric_math): its
 * values have PostgreSQL's scale of at least 16 significant digits; a column
 * holds them at scale 20 (as quotients), or the argument's if larger; a
 * constant folds at exactly its scale. */
static ex_ty numeric_math_type(const ex_node *x, int aux)
{
    int s = x->type.scale > 20 ? x->type.scale : 20;
    if (exb_is_const(x) && !x->val.null) {
        /* the scale PostgreSQL gives this value (as numeric_math) */
        __int128 v = x->val.d;
        int sx = x->type.scale, rs;
        if (aux == EX_M_EXP) {
            double val = (double)v;
            for (int i = 0; i < sx; i++)
                val /= 10;
            val *= 0.434294481903252;
            val = val > 1000 ? 1000 : val < -1000 ? -1000 : val;
            rs = 16 - (int)val;
        } else {
            rs = 16; /* refined below for ln/log */
            if (v > 0) {
                __int128 one = 1;
                for (int i = 0; i < sx; i++)
                    one *= 10;
                if (v * 10 >= one * 9 && v * 10 <= one * 11) {
                    __int128 d = v - one < 0 ? one - v : v - one;
                    int nd = 0;
                    for (; d > 0; d /= 10)
                        nd++;
                    rs = v == one ? 16 : 16 - (nd - 1 - sx);
                } else {
                    double xd = (double)v;
                    for (int i = 0; i < sx; i++)
                        xd /= 10;
                    double l = log(xd);
                    rs = 16 - (l == 0 ? 0 : (int)log10(fabs(l)));
                }
            }
        }
        if (rs < sx)
            rs = sx;
        if (rs < 0)
            rs = 0;
        if (rs <= 38)
            s = rs;
    }
    if (s > 38)
        s = 38;
    return exb_dec_type(38 - s, s);
}

/* power(x, y) is power(numeric, numeric) when one argument is numeric and
 * the other numeric, an integer, an unknown literal or NULL (PostgreSQL's
 * overload resolution: more exact matches than power(float8, float8); a
 * double precision argument picks that one). */
static bool numeric_power_args(const ex_node *x, const ex_node *y)
{
    ex_t tx = x->type.t, ty = y->type.t;
    bool ox = tx == EX_T_DEC || tx == EX_T_INT || tx == EX_T_UNKNOWN || tx == EX_T_NULL;
    bool oy = ty == EX_T_DEC || ty == EX_T_INT || ty == EX_T_UNKNOWN || ty == EX_T_NULL;
    return (tx == EX_T_DEC && oy) || (ty == EX_T_DEC && ox);
}

/* The type of power(numeric, numeric) (expr_num.c numeric_power): constants
 * fold at exactly PostgreSQL's scale; an integer exponent (an integer
 * column, an integral constant) has PostgreSQL's scale max(16, the base's)
 * on every row; otherwise the scale varies by row and values are held at
 * scale 20 (or the arguments' if larger), as exp/ln/log of numerics.
 * y_int: y was an integer before want_dec cast it. */
static ex_ty numeric_power_type(const ex_node *x, const ex_node *y, bool y_int)
{
    int s = x->type.scale > y->type.scale ? x->type.scale : y->type.scale;
    s = s > 20 ? s : 20;
    if (exb_is_const(y) && !y->val.null && y->val.d % ex_pow10(y->type.scale) == 0)
        y_int = y->val.d / ex_pow10(y->type.scale) <= INT32_MAX &&
                y->val.d / ex_pow10(y->type.scale) >= INT32_MIN;
    if (y_int)
        s = x->type.scale > 16 ? x->type.scale : 16;
    if (exb_is_const(x) && exb_is_const(y) && !x->val.null && !y->val.null)
        s = ex_power_scale(x->val.d, x->type.scale, y->val.d, y->type.scale);
    s = s > 38 ? 38 : s;
    return exb_dec_type(38 - s, s);
}

static bool is_list_col(const ex_node *x)
{
    return x->kind == EX_COL && x->type.t == EX_T_OTHER && x->field &&
           (x->field->type == HS_TYPE_LIST || x->field->type == HS_TYPE_FIXED_LIST) &&
           x->field->n_children == 1;
}

hs_status exb_func_more(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n, int loc,
                                ex_node **out)
{
    ex_ty rt = exb_ty(EX_T_STR);
    int aux = 0;
    bool neg = false, ci = false;
    char b1[48];
    bool done;
    HS_TRY(exb_na_func(b, fn, f, a, n, loc, &done, out));   /* numeric arrays */
    if (done)
        return HS_OK;
    HS_TRY(exb_ta_func(b, fn, f, a, n, loc, &done, out));   /* text[] values */
    if (done)
        return HS_OK;
    switch (f) {
    case EX_FN_SIGN:
        if (a[0]->type.t == EX_T_DEC) {
            rt = exb_dec_type(1, 0);
        } else {
            HS_TRY(want_float(b, &a[0], fn));
            rt = exb_ty(EX_T_FLOAT);
        }
        break;
    case EX_FN_TRUNC:
        if (n == 1 && a[0]->type.t != EX_T_DEC) {
            HS_TRY(want_float(b, &a[0], fn));
            rt = exb_ty(EX_T_FLOAT);
            break;
        }
        HS_TRY(want_dec(b, &a[0], fn));
        if (n == 2) {
            HS_TRY(want_int(b, &a[1], fn));
            if (!exb_is_const(a[1]) || a[1]->val.null)
                return exb_err(b, HS_UNSUPPORTED, a[1]->loc, "trunc: the digits must be a constant");
            int64_t d = a[1]->val.i;
            aux = d < -38 ? -38 : d > 38 ? 38 : (int)d;
        }
        rt = exb_dec_type(exb_int_digits(&a[0]->type), aux < 0 ? 0 : aux);
        n = 1;
        break;
    case EX_FN_MATH: {
        static const char *const names[] = {"exp", "ln", "log10", "cbrt", "sin", "cos", "tan",
                                            "asin", "acos", "atan", "degrees", "radians"};
        for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
            if (!strcasecmp(fn, names[i]))
                aux = i;
        if (a[0]->type.t == EX_T_DEC && (aux == EX_M_EXP || aux == EX_M_LN || aux == EX_M_LOG10)) {
            rt = numeric_math_type(a[0], aux);
            break;
        }
        HS_TRY(want_float(b, &a[0], fn));
        rt = exb_ty(EX_T_FLOAT);
        break;
    }
    case EX_FN_LOG2:
        if (n == 1) { /* log(x) is log10(x) */
            f = EX_FN_MATH;
            aux = EX_M_LOG10;
            if (a[0]->type.t == EX_T_DEC) {
                rt = numeric_math_type(a[0], aux);
                break;
            }
            HS_TRY(want_float(b, &a[0], fn));
            rt = exb_ty(EX_T_FLOAT);
            break;
        }
        /* fallthrough */
    case EX_FN_POWER: case EX_FN_ATAN2:
        if (f == EX_FN_POWER && numeric_power_args(a[0], a[1])) {
            bool y_int = a[1]->type.t == EX_T_INT && a[1]->type.bits <= 32;
            HS_TRY(want_dec(b, &a[0], fn));
            HS_TRY(want_dec(b, &a[1], fn));
            rt = numeric_power_type(a[0], a[1], y_int);
            break;
        }
        if (n == 0) { /* pi() */
            ex_node *c = exb_mk_const(b, exb_ty(EX_T_FLOAT), loc);
            if (!c)
                return exb_nomem(b);
            c->val.f = 3.14159265358979323846;
            *out = c;
            return HS_OK;
        }
        HS_TRY(want_float(b, &a[0], fn));
        HS_TRY(want_float(b, &a[1], fn));
        rt = exb_ty(EX_T_FLOAT);
        break;
    case EX_FN_DIV:
        if (!strcasecmp(fn, "mod")) {
            if (a[0]->type.t == EX_T_FLOAT || a[1]->type.t == EX_T_FLOAT) {
                char b2[48];
                return exb_err(b, HS_NOT_FOUND, loc, "function mod(%s, %s) does not exist",
                              exb_tname(&a[0]->type, b1), exb_tname(&a[1]->type, b2));
            }
            return exb_arith(b, '%', a[0], a[1], loc, out);
        }
        HS_TRY(want_dec(b, &a[0], fn));
        HS_TRY(want_dec(b, &a[1], fn));
        rt = exb_dec_type(38, 0);
        break;
    case EX_FN_NUM_STDDEV: {
        /* (count, sum(x), sum(x * x), S): plan_rewrite.c's numeric
         * variance and stddev held at scale S, a constant the planner
         * picks so that every value of the argument's type fits */
        for (int i = 0; i < 3; i++)
            HS_TRY(want_dec(b, &a[i], fn));
        if (!exb_is_const(a[3]) || a[3]->type.t != EX_T_INT || a[3]->val.null ||
            a[3]->val.i < 0 || a[3]->val.i > 38)
            return exb_err(b, HS_INVALID, loc, "%s: the scale must be a constant 0..38", fn);
        int S = (int)a[3]->val.i;
        rt = exb_dec_type(38 - S, S);
        aux = (strstr(fn, "stddev") ? 1 : 0) | (strstr(fn, "samp") ? 2 : 0);
        break;
    }
    case EX_FN_LPAD: case EX_FN_RPAD:
        HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        HS_TRY(want_int(b, &a[1], fn));
        if (n == 3)
            HS_TRY(want_type(b, &a[2], EX_T_STR, fn));
        break;
    case EX_FN_CONCAT_WS:
        for (int i = 0; i < n; i++) {
            if (a[i]->type.t == EX_T_OTHER)
                return exb_err(b, HS_INVALID, a[i]->loc, "concat_ws cannot take %s", exb_tname(&a[i]->type, b1));
            HS_TRY(exb_cast_to(b, &a[i], exb_ty(EX_T_STR), false));
        }
        break;
    case EX_FN_TRANSLATE: case EX_FN_INITCAP:
        for (int i = 0; i < n; i++)
            HS_TRY(want_type(b, &a[i], EX_T_STR, fn));
        break;
    case EX_FN_MD5: case EX_FN_OCTET_LENGTH: case EX_FN_BIT_LENGTH:
        if (a[0]->type.t != EX_T_BIN)
            HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        if (f != EX_FN_MD5) {
            rt = exb_ty(EX_T_INT);
            rt.bits = 32;
        }
        break;
    case EX_FN_CHR:
        HS_TRY(want_int(b, &a[0], fn));
        break;
    case EX_FN_ASCII:
        HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        rt = exb_ty(EX_T_INT);
        rt.bits = 32;
        break;
    case EX_FN_MAKE_DATE:
        for (int i = 0; i < 3; i++)
            HS_TRY(want_int(b, &a[i], fn));
        rt = exb_ty(EX_T_DATE);
        break;
    case EX_FN_REGEX: case EX_FN_REGEXP_REPLACE: case EX_FN_REGEXP_COUNT: case EX_FN_REGEXP_SUBSTR: {
        for (int i = 0; i < n; i++) {
            if (f == EX_FN_REGEXP_COUNT && i == 2)
                HS_TRY(want_int(b, &a[i], fn));
            else
                HS_TRY(want_type(b, &a[i], EX_T_STR, fn));
        }
        int fi = f == EX_FN_REGEX ? 2 : f == EX_FN_REGEXP_REPLACE ? 3 : f == EX_FN_REGEXP_COUNT ? 3 : -1;
        if (f == EX_FN_REGEXP_COUNT && n < 4) {
            ex_node **a4 = hs_arena_calloc(&b->e->arena, 4, sizeof *a4);
            if (!a4)
                return exb_nomem(b);
            memcpy(a4, a, (size_t)n * sizeof *a);
            a = a4;
        }
        if (f == EX_FN_REGEXP_COUNT && n == 3) { /* regexp_count(s, p, start): no flags */
            ex_node *c = exb_mk_const(b, exb_ty(EX_T_STR), loc);
            if (!c)
                return exb_nomem(b);
            c->val.s.p = (const uint8_t *)"";
            a[3] = c;
            n = 4;
        }
        if (f == EX_FN_REGEXP_COUNT && n == 2) {
            ex_node *one = exb_mk_const(b, exb_ty(EX_T_INT), loc), *c = exb_mk_const(b, exb_ty(EX_T_STR), loc);
            if (!one || !c)
                return exb_nomem(b);
            one->val.i = 1;
            c->val.s.p = (const uint8_t *)"";
            a[2] = one;
            a[3] = c;
            n = 4;
        }
        if (f == EX_FN_REGEX && n == 3) { /* regexp_like(s, p, flags): 'g' is refused */
            ex_node *fl = a[2];
            if (exb_is_const(fl) && !fl->val.null && memchr(fl->val.s.p, 'g', fl->val.s.n))
                return exb_err(b, HS_INVALID, loc, "regexp_like() does not support the \"global\" option");
        }
        HS_TRY(check_regex(b, a[1], fi >= 0 && fi < n ? a[fi] : NULL, false, loc));
        rt = f == EX_FN_REGEX ? exb_ty(EX_T_BOOL) : f == EX_FN_REGEXP_COUNT ? exb_ty(EX_T_INT) : exb_ty(EX_T_STR);
        if (f == EX_FN_REGEXP_COUNT)
            rt.bits = 32;
        break;
    }
    case EX_FN_TO_CHAR:
        if (a[0]->type.t == EX_T_UNKNOWN)
            return exb_err(b, HS_INVALID, loc, "function to_char(unknown, unknown) is not unique");
        if (exb_is_num(a[0]->type.t)) {
            HS_TRY(want_type(b, &a[1], EX_T_STR, fn));
            if (exb_is_const(a[1]) && !a[1]->val.null) {
                char msg[256];
                int nf = ex_to_char_frac_digits(&a[1]->val.s, msg);
                if (nf < 0)
                    return exb_err(b, nf == -1 ? HS_UNSUPPORTED : HS_INVALID, a[1]->loc, "%s", msg);
            }
            break;
        }
        if (a[0]->type.t == EX_T_DATE)
            HS_TRY(exb_cast_to(b, &a[0], exb_ty(EX_T_TS), false));
        if (a[0]->type.t != EX_T_TS && a[0]->type.t != EX_T_NULL)
            return exb_err(b, HS_NOT_FOUND, loc, "function to_char(%s, text) does not exist",
                          exb_tname(&a[0]->type, b1));
        if (a[0]->type.t == EX_T_NULL)
            HS_TRY(exb_cast_to(b, &a[0], exb_ty(EX_T_TS), false));
        if (a[0]->type.tz)
            return exb_err(b, HS_UNSUPPORTED, loc, "to_char of timestamptz is not supported (cast to timestamp: UTC)");
        HS_TRY(want_type(b, &a[1], EX_T_STR, fn));
        break;
    case EX_FN_JUSTIFY_DAYS: case EX_FN_JUSTIFY_HOURS: case EX_FN_JUSTIFY_INTERVAL:
        HS_TRY(want_type(b, &a[0], EX_T_INTERVAL, fn));
        rt = exb_ty(EX_T_INTERVAL);
        break;
    case EX_FN_ARRAY_TO_STRING: case EX_FN_ARRAY_POSITION: {
        if (!is_list_col(a[0]))
            return exb_err(b, a[0]->type.t == EX_T_OTHER || ex_is_pvx(a[0]->type.t) ? HS_UNSUPPORTED
                                                                                   : HS_NOT_FOUND,
                           a[0]->loc, "function %s(%s) is not supported", fn,
                           a[0]->type.t == EX_T_OTHER ? "this expression" : exb_tname(&a[0]->type, b1));
        ex_ty et = ex_type_of_field(&a[0]->field->children[0]);
        if (et.t == EX_T_OTHER || ex_is_pvx(et.t) || et.t == EX_T_INTERVAL)
            return exb_err(b, HS_UNSUPPORTED, a[0]->loc, "function %s of arrays of %s is not supported",
                           fn, et.t == EX_T_OTHER ? "nested values" : exb_tname(&et, b1));
        if (f == EX_FN_ARRAY_TO_STRING) {
            for (int i = 1; i < n; i++)
                HS_TRY(want_type(b, &a[i], EX_T_STR, fn));
            break;
        }
        ex_node *x = a[1];
        char b2[48];
        bool same = x->type.t == et.t && (et.t != EX_T_DEC || x->type.scale <= et.scale) &&
                    (et.t != EX_T_TS || (x->type.unit == et.unit && x->type.tz == et.tz)) &&
                    (et.t != EX_T_TIME || x->type.unit == et.unit) && x->type.uuid == et.uuid;
        /* integers and floats compare as int64 and double as they are (a
         * double is not rounded to a real element's precision: PostgreSQL
         * compares them as float8) */
        if (x->type.t == EX_T_UNKNOWN || x->type.t == EX_T_NULL ||
            (same && et.t != EX_T_INT && et.t != EX_T_FLOAT))
            HS_TRY(exb_cast_to(b, &a[1], et, true));
        else if (!same)
            return exb_err(b, HS_UNSUPPORTED, x->loc, "array_position of a %s in an array of %s is not "
                           "supported (cast it to the element type)", exb_tname(&x->type, b1),
                           exb_tname(&et, b2));
        if (n == 3)
            HS_TRY(want_int(b, &a[2], fn));
        rt = exb_ty(EX_T_INT);
        rt.bits = 32;
        break;
    }
    case EX_FN_AGE:
        if (n == 1) /* age(ts): from the current date, which expressions do not read */
            return exb_err(b, HS_UNSUPPORTED, loc, "age(timestamp) is not supported (it reads the "
                           "current date): use age(ts1, ts2)");
        for (int i = 0; i < 2; i++) {
            ex_t t = a[i]->type.t;
            if (t == EX_T_DATE || t == EX_T_UNKNOWN || t == EX_T_NULL)
                HS_TRY(exb_cast_to(b, &a[i], exb_ty(EX_T_TS), t != EX_T_DATE));
            if (a[i]->type.t != EX_T_TS)
                return exb_err(b, HS_NOT_FOUND, a[i]->loc, "function age(%s) does not exist",
                               exb_tname(&a[i]->type, b1));
        }
        if (a[0]->type.unit != a[1]->type.unit || a[0]->type.tz != a[1]->type.tz) {
            ex_ty w = a[0]->type;
            w.unit = HS_UNIT_MICRO;
            w.tz = a[0]->type.tz || a[1]->type.tz;
            HS_TRY(exb_cast_to(b, &a[0], w, false));
            HS_TRY(exb_cast_to(b, &a[1], w, false));
        }
        rt = exb_ty(EX_T_INTERVAL);
        break;
    case EX_FN_CARDINALITY: case EX_FN_ARRAY_LENGTH:
        if (a[0]->type.t == EX_T_ARRAY) {   /* ARRAY[...], '{...}'::int[] */
            if (n == 2)
                HS_TRY(want_int(b, &a[1], fn));
            rt = exb_ty(EX_T_INT);
            rt.bits = 32;
            break;
        }
        if (!is_list_col(a[0]) && (a[0]->type.t == EX_T_OTHER || ex_is_pvx(a[0]->type.t)))
            return exb_err(b, HS_UNSUPPORTED, a[0]->loc, "function %s of %s is not supported", fn,
                          a[0]->type.t == EX_T_OTHER ? "this expression" : exb_tname(&a[0]->type, b1));
        if (!is_list_col(a[0]))
            return exb_err(b, HS_NOT_FOUND, a[0]->loc, "function %s(%s) does not exist", fn,
                          exb_tname(&a[0]->type, b1));
        if (n == 2)
            HS_TRY(want_int(b, &a[1], fn));
        rt = exb_ty(EX_T_INT);
        rt.bits = 32;
        break;
    default:
        return exb_err(b, HS_INTERNAL, loc, "function %s is not supported", fn);
    }
    (void)neg;
    (void)ci;
    ex_node *x = exb_mk(b, EX_FUNC, rt, loc, 0);
    if (!x)
        return exb_nomem(b);
    x->op = (int)f;
    x->aux = aux;
    x->args = a;
    x->n_args = n;
    *out = x;
    return exb_fold(b, out, false);
}

/* s ~ p, s ~* p, s !~ p, s !~* p */
hs_status exb_regex_op(ex_binder *b, const char *opname, ex_node *l, ex_node *r, int loc,
                               ex_node **out)
{
    HS_TRY(want_type(b, &l, EX_T_STR, opname));
    HS_TRY(want_type(b, &r, EX_T_STR, opname));
    bool ci = strchr(opname, '*') != NULL, neg = opname[0] == '!';
    HS_TRY(check_regex(b, r, NULL, ci, loc));
    ex_node *x = exb_mk(b, EX_FUNC, exb_ty(EX_T_BOOL), loc, 2);
    if (!x)
        return exb_nomem(b);
    x->op = EX_FN_REGEX;
    x->args[0] = l;
    x->args[1] = r;
    x->neg = neg;
    x->ci = ci;
    *out = x;
    return exb_fold(b, out, false);
}

hs_status exb_func(ex_binder *b, json_t *body, ex_node **out)
{
    int loc = exb_loc(body);
    bool other;
    const char *fn = exb_last_name(json_object_get(body, "funcname"), &other);
    if (!fn)
        return exb_err(b, HS_INTERNAL, loc, "malformed function call");
    if (json_is_true(json_object_get(body, "agg_star")) || json_object_get(body, "over") ||
        json_is_true(json_object_get(body, "agg_distinct")) || json_object_get(body, "agg_filter") ||
        json_object_get(body, "agg_order") || json_is_true(json_object_get(body, "agg_within_group")))
        return exb_err(b, HS_UNSUPPORTED, loc, "aggregate and window functions are not supported here");
    if (json_is_true(json_object_get(body, "func_variadic")))
        return exb_err(b, HS_UNSUPPORTED, loc, "VARIADIC is not supported");
    if (!other && exb_pv_funcname(fn))
        return exb_pv_func(b, fn, json_object_get(body, "args"), loc, out);
    static const struct { const char *name; ex_fn fn; int min, max; } fns[] = {
        {"lower", EX_FN_LOWER, 1, 1}, {"upper", EX_FN_UPPER, 1, 1},
        {"length", EX_FN_LENGTH, 1, 1}, {"char_length", EX_FN_LENGTH, 1, 1},
        {"character_length", EX_FN_LENGTH, 1, 1}, {"abs", EX_FN_ABS, 1, 1},
        {"round", EX_FN_ROUND, 1, 2}, {"floor", EX_FN_FLOOR, 1, 1}, {"ceil", EX_FN_CEIL, 1, 1},
        {"ceiling", EX_FN_CEIL, 1, 1}, {"sqrt", EX_FN_SQRT, 1, 1},
        {"starts_with", EX_FN_STARTS_WITH, 2, 2}, {"substr", EX_FN_SUBSTR, 2, 3},
        {"substring", EX_FN_SUBSTR, 2, 3}, {"btrim", EX_FN_BTRIM, 1, 2}, {"trim", EX_FN_BTRIM, 1, 2},
        {"ltrim", EX_FN_LTRIM, 1, 2}, {"rtrim", EX_FN_RTRIM, 1, 2},
        {"concat", EX_FN_CONCAT, 1, 1000}, {"date_part", EX_FN_DATE_PART, 2, 2},
        {"extract", EX_FN_DATE_PART, 2, 2}, {"datepart", EX_FN_DATE_PART, 2, 2},
        {"date_trunc", EX_FN_DATE_TRUNC, 2, 2}, {"datetrunc", EX_FN_DATE_TRUNC, 2, 2},
        {"replace", EX_FN_REPLACE, 3, 3}, {"strpos", EX_FN_STRPOS, 2, 2},
        {"position", EX_FN_STRPOS, 2, 2}, {"left", EX_FN_LEFT, 2, 2},
        {"right", EX_FN_RIGHT, 2, 2}, {"repeat", EX_FN_REPEAT, 2, 2},
        {"reverse", EX_FN_REVERSE, 1, 1}, {"split_part", EX_FN_SPLIT_PART, 3, 3},
        {"sign", EX_FN_SIGN, 1, 1}, {"trunc", EX_FN_TRUNC, 1, 2}, {"power", EX_FN_POWER, 2, 2},
        {"pow", EX_FN_POWER, 2, 2}, {"exp", EX_FN_MATH, 1, 1}, {"ln", EX_FN_MATH, 1, 1},
        {"log", EX_FN_LOG2, 1, 2}, {"log10", EX_FN_MATH, 1, 1}, {"cbrt", EX_FN_MATH, 1, 1},
        {"sin", EX_FN_MATH, 1, 1}, {"cos", EX_FN_MATH, 1, 1}, {"tan", EX_FN_MATH, 1, 1},
        {"asin", EX_FN_MATH, 1, 1}, {"acos", EX_FN_MATH, 1, 1}, {"atan", EX_FN_MATH, 1, 1},
        {"degrees", EX_FN_MATH, 1, 1}, {"radians", EX_FN_MATH, 1, 1},
        {"atan2", EX_FN_ATAN2, 2, 2}, {"pi", EX_FN_ATAN2, 0, 0}, {"mod", EX_FN_DIV, 2, 2},
        {"div", EX_FN_DIV, 2, 2}, {"hs_numeric_var_pop", EX_FN_NUM_STDDEV, 4, 4},
        {"hs_numeric_stddev_pop", EX_FN_NUM_STDDEV, 4, 4}, {"hs_numeric_var_samp", EX_FN_NUM_STDDEV, 4, 4},
        {"hs_numeric_stddev_samp", EX_FN_NUM_STDDEV, 4, 4},
        {"lpad", EX_FN_LPAD, 2, 3}, {"rpad", EX_FN_RPAD, 2, 3},
        {"concat_ws", EX_FN_CONCAT_WS, 1, 1000}, {"translate", EX_FN_TRANSLATE, 3, 3},
        {"md5", EX_FN_MD5, 1, 1}, {"chr", EX_FN_CHR, 1, 1}, {"ascii", EX_FN_ASCII, 1, 1},
        {"octet_length", EX_FN_OCTET_LENGTH, 1, 1}, {"bit_length", EX_FN_BIT_LENGTH, 1, 1},
        {"initcap", EX_FN_INITCAP, 1, 1}, {"make_date", EX_FN_MAKE_DATE, 3, 3},
        {"regexp_like", EX_FN_REGEX, 2, 3}, {"regexp_replace", EX_FN_REGEXP_REPLACE, 3, 4},
        {"regexp_count", EX_FN_REGEXP_COUNT, 2, 4}, {"regexp_substr", EX_FN_REGEXP_SUBSTR, 2, 2},
        {"to_char", EX_FN_TO_CHAR, 2, 2}, {"cardinality", EX_FN_CARDINALITY, 1, 1},
        {"array_length", EX_FN_ARRAY_LENGTH, 2, 2}, {"justify_days", EX_FN_JUSTIFY_DAYS, 1, 1},
        {"array_to_string", EX_FN_ARRAY_TO_STRING, 2, 3}, {"array_position", EX_FN_ARRAY_POSITION, 2, 3},
        {"justify_hours", EX_FN_JUSTIFY_HOURS, 1, 1}, {"justify_interval", EX_FN_JUSTIFY_INTERVAL, 1, 1},
        {"age", EX_FN_AGE, 1, 2}, {"string_to_array", EX_FN_TA_SPLIT, 2, 3},
        {"array_append", EX_FN_TA_APPEND, 2, 2}, {"array_prepend", EX_FN_TA_APPEND, 2, 2},
        {"array_cat", EX_FN_TA_CAT, 2, 2}, {"array_positions", EX_FN_NA_POSITION, 2, 2},
        {"array_remove", EX_FN_NA_REMOVE, 2, 2}, {"array_replace", EX_FN_NA_REPLACE, 3, 3},
        {"array_lower", EX_FN_ARR_SHAPE, 2, 2}, {"array_upper", EX_FN_ARR_SHAPE, 2, 2},
        {"array_ndims", EX_FN_ARR_SHAPE, 1, 1}, {"array_dims", EX_FN_ARR_SHAPE, 1, 1},
    };
    int which = -1;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0] && which < 0 && !other; i++)
        if (strcasecmp(fn, fns[i].name) == 0)
            which = (int)i;
    ex_node **a;
    int n;
    HS_TRY(exb_list(b, json_object_get(body, "args"), &a, &n));
    if (which < 0 && !other && pg_builtin_name(fn))
        return exb_err(b, HS_UNSUPPORTED, loc, "function %s is not supported", fn);
    if (which < 0) {
        /* as PostgreSQL: the arguments bind first (their errors win), then a
         * name no function has is 42883 undefined_function */
        char sig[200];
        size_t at = 0;
        sig[0] = 0;
        for (int i = 0; i < n && at < sizeof sig - 1; i++) {
            char tb[48];
            int k = snprintf(sig + at, sizeof sig - at, "%s%s", i ? ", " : "",
                             exb_tname(&a[i]->type, tb));
            at = k < 0 ? at : (size_t)k >= sizeof sig - at ? sizeof sig - 1 : at + (size_t)k;
        }
        return exb_err(b, HS_NOT_FOUND, loc, "function %s(%s) does not exist", fn, sig);
    }
    if (n < fns[which].min || n > fns[which].max)
        return exb_err(b, HS_INVALID, loc, "function %s takes %d to %d arguments, not %d", fn,
                      fns[which].min, fns[which].max, n);
    ex_fn f = fns[which].fn;
    int n_given = n;
    if (f >= EX_FN_SIGN)
        return exb_func_more(b, fn, f, a, n, loc, out);
    ex_ty rt = exb_ty(EX_T_STR);
    int aux = 0;
    char b1[48];
    switch (f) {
    case EX_FN_LOWER: case EX_FN_UPPER:
        HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        break;
    case EX_FN_LENGTH:
        if (a[0]->type.t != EX_T_BIN)
            HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        rt = exb_ty(EX_T_INT);
        break;
    case EX_FN_ABS: case EX_FN_FLOOR: case EX_FN_CEIL: case EX_FN_ROUND: case EX_FN_SQRT:
        if (a[0]->type.t == EX_T_UNKNOWN || a[0]->type.t == EX_T_NULL)
            HS_TRY(exb_cast_to(b, &a[0], exb_ty(EX_T_FLOAT), true));
        if (!exb_is_num(a[0]->type.t))
            return exb_err(b, HS_INVALID, a[0]->loc, "function %s expects a number, not %s", fn,
                          exb_tname(&a[0]->type, b1));
        if (f == EX_FN_SQRT || ((f == EX_FN_FLOOR || f == EX_FN_CEIL) && a[0]->type.t == EX_T_INT))
            HS_TRY(exb_coerce(b, &a[0], exb_ty(EX_T_FLOAT)));
        /* PostgreSQL: round(integer) is round(double precision), round(integer,
         * n) round(numeric, n) */
        if (f == EX_FN_ROUND && a[0]->type.t == EX_T_INT)
            HS_TRY(n == 1 ? exb_coerce(b, &a[0], exb_ty(EX_T_FLOAT))
                          : exb_cast_to(b, &a[0], exb_dec_type(exb_int_digits(&a[0]->type), 0), false));
        rt = a[0]->type;
        if (rt.t == EX_T_INT)
            rt.bits = 64;
        if ((f == EX_FN_FLOOR || f == EX_FN_CEIL) && rt.t == EX_T_DEC)
            rt = exb_dec_type(exb_int_digits(&rt) + 1, 0);
        if (f == EX_FN_ROUND) {
            if (n == 2) {
                HS_TRY(want_int(b, &a[1], fn));
                if (!exb_is_const(a[1]) || a[1]->val.null)
                    return exb_err(b, HS_UNSUPPORTED, a[1]->loc, "round: the digits must be a constant");
                int64_t d = a[1]->val.i;
                aux = d < -38 ? -38 : d > 38 ? 38 : (int)d;
            }
            if (rt.t == EX_T_DEC) /* the result's scale is the digits (PostgreSQL) */
                rt = exb_dec_type(exb_int_digits(&a[0]->type) + 1, aux < 0 ? 0 : aux);
            n = 1;
        }
        break;
    case EX_FN_STARTS_WITH:
        HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        HS_TRY(want_type(b, &a[1], EX_T_STR, fn));
        rt = exb_ty(EX_T_BOOL);
        break;
    case EX_FN_SUBSTR:
        HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        for (int i = 1; i < n; i++)
            HS_TRY(want_int(b, &a[i], fn));
        break;
    case EX_FN_BTRIM: case EX_FN_LTRIM: case EX_FN_RTRIM:
        for (int i = 0; i < n; i++)
            HS_TRY(want_type(b, &a[i], EX_T_STR, fn));
        break;
    case EX_FN_REPLACE: case EX_FN_REVERSE:
        for (int i = 0; i < n; i++)
            HS_TRY(want_type(b, &a[i], EX_T_STR, fn));
        break;
    case EX_FN_STRPOS:
        /* position(sub IN s) arrives as position(s, sub), as in PostgreSQL */
        for (int i = 0; i < n; i++)
            HS_TRY(want_type(b, &a[i], EX_T_STR, fn));
        rt = exb_ty(EX_T_INT);
        break;
    case EX_FN_LEFT: case EX_FN_RIGHT: case EX_FN_REPEAT:
        HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        HS_TRY(want_int(b, &a[1], fn));
        break;
    case EX_FN_SPLIT_PART:
        HS_TRY(want_type(b, &a[0], EX_T_STR, fn));
        HS_TRY(want_type(b, &a[1], EX_T_STR, fn));
        HS_TRY(want_int(b, &a[2], fn));
        break;
    case EX_FN_CONCAT:
        for (int i = 0; i < n; i++) {
            if (a[i]->type.t == EX_T_OTHER)
                return exb_err(b, HS_INVALID, a[i]->loc, "concat cannot take %s", exb_tname(&a[i]->type, b1));
            HS_TRY(exb_cast_to(b, &a[i], exb_ty(EX_T_STR), false));
        }
        break;
    case EX_FN_DATE_PART: case EX_FN_DATE_TRUNC: {
        ex_node *fld = a[0];
        if (!exb_is_const(fld) || fld->val.null || (fld->type.t != EX_T_UNKNOWN && fld->type.t != EX_T_STR))
            return exb_err(b, HS_UNSUPPORTED, fld->loc, "%s: the field must be a constant string", fn);
        ex_dfield df;
        if (!ex_dfield_parse((const char *)fld->val.s.p, fld->val.s.n, &df))
            return exb_err(b, HS_INVALID, fld->loc, "unit \"%.*s\" not recognized", (int)(fld->val.s.n > 40 ? 40 : fld->val.s.n),
                          (const char *)fld->val.s.p);
        aux = (int)df;
        ex_node *x = a[1];
        if (x->type.t == EX_T_UNKNOWN || x->type.t == EX_T_NULL)
            HS_TRY(exb_cast_to(b, &x, exb_ty(EX_T_TS), true));
        if (f == EX_FN_DATE_TRUNC && x->type.t == EX_T_DATE)
            HS_TRY(exb_cast_to(b, &x, exb_ty(EX_T_TS), false));
        ex_t xt = x->type.t;
        bool ok = f == EX_FN_DATE_PART ? (xt == EX_T_DATE || xt == EX_T_TS || xt == EX_T_TIME ||
                                          xt == EX_T_INTERVAL)
                                       : xt == EX_T_TS;
        if (xt == EX_T_INTERVAL && df != EX_DF_EPOCH && df != EX_DF_YEAR && df != EX_DF_QUARTER &&
            df != EX_DF_MONTH && df != EX_DF_DAY && df != EX_DF_HOUR && df != EX_DF_MINUTE &&
            df != EX_DF_SECOND && df != EX_DF_MILLISECOND && df != EX_DF_MICROSECOND)
            return exb_err(b, HS_INVALID, fld->loc, "unit \"%.*s\" not supported for type interval",
                          (int)(fld->val.s.n > 40 ? 40 : fld->val.s.n), (const char *)fld->val.s.p);
        if (!ok)
            return exb_err(b, HS_INVALID, x->loc, "function %s does not take %s", fn, exb_tname(&x->type, b1));
        if (f == EX_FN_DATE_TRUNC && (df == EX_DF_DOW || df == EX_DF_DOY || df == EX_DF_EPOCH ||
                                      df == EX_DF_ISODOW || df == EX_DF_ISOYEAR))
            return exb_err(b, HS_INVALID, fld->loc, "unit \"%.*s\" not recognized for type timestamp", (int)(fld->val.s.n > 40 ? 40 : fld->val.s.n), (const char *)fld->val.s.p);
        a[0] = x;
        n = 1;
        rt = f == EX_FN_DATE_PART ? exb_ty(df == EX_DF_EPOCH ? EX_T_FLOAT : EX_T_INT) : x->type;
        break;
    }
    default: /* the pgvector functions bind in bind_pv_func */
        return exb_err(b, HS_INTERNAL, loc, "function %s is not supported", fn);
    }
    ex_node *x = exb_mk(b, EX_FUNC, rt, loc, 0);
    if (!x)
        return exb_nomem(b);
    x->op = (int)f;
    x->aux = aux;
    x->args = a;
    x->n_args = n;
    /* round(double, n) (not PostgreSQL's) keeps rounding half away from zero */
    x->neg = f == EX_FN_ROUND && n_given == 2;
    *out = x;
    return exb_fold(b, out, false);
}

