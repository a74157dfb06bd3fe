/*
 * expr/expr_int.h - internals shared by the files of the expression module:
 * expr_bind.c (text -> libpg_query JSON -> bound tree), expr_bindfn.c
 * (function calls: names, argument and result types), expr_eval.c
 * (vectorized evaluation, casts, constant folding), expr_num.c (decimal
 * arithmetic, numeric functions), expr_func.c (strings, LIKE, case mapping,
 * dates), expr_strfn.c and expr_sqlfn.c (more functions), expr_interval.c
 * (intervals) and expr_filter.c (ex_to_pred, ex_format, small accessors).
 *
 * The bound tree.  Every node has a result type (ex_ty) and the 0-based
 * byte offset of the text it came from (loc, -1 when unknown), which error
 * messages quote.  Binding inserts every implicit conversion as an explicit
 * EX_CAST node, so evaluation never guesses: the children of a node have
 * exactly the types the node's kernel expects.
 *
 *   kind          args                          notes
 *   -----------   ---------------------------   -----------------------------------
 *   CONST         -                             val (null when val.null)
 *   COL           -                             field, field_id, slot (cache index)
 *   NOT           1 BOOL
 *   AND, OR       n >= 2 BOOL                   Kleene logic, short-circuit per row
 *   CMP           2 of one compare type (or     op = pr_op; cmode says how to compare
 *                 int and double, exactly)
 *   DISTINCT      2 of one compare type         IS [NOT] DISTINCT FROM (neg = NOT)
 *   IN            lhs, items... (one compare     neg = NOT IN; set: the constant items
 *                 type)                         sorted, for binary search (optional)
 *   IS_NULL       1 any                         neg = IS NOT NULL
 *   BOOLTEST      1 BOOL                        op = ex_booltest
 *   LIKE          value, pattern                neg, ci (ILIKE), esc; pat = compiled
 *                                               constant pattern (or NULL)
 *   ARITH         2                             op = '+','-','*','/','%','|' (||); aux =
 *                                               EX_DIV_ROUND: a numeric '/' whose quotient
 *                                               is cast to a numeric(p, s): rounded at s
 *   NEG           1
 *   CAST          1                             to the node's type
 *   BETWEEN       x, lo, hi (one compare type)  neg = NOT BETWEEN; aux = 1: SYMMETRIC
 *   CASE          cond1, res1, ..., else        aux = 0; else may be a NULL CONST
 *                 subject, val1, res1, ..., else  aux = 1 (CASE x WHEN v ...): each WHEN
 *                                               is subject = val (cmode), x evaluated once
 *   COALESCE      n >= 1
 *   NULLIF        2 (same type)
 *   FUNC          per function                  op = ex_fn
 *
 * Types.  All integers are held as int64 at run time (bits keeps the width of
 * a column or cast for range checks and for the hs_field ex_type() reports), floats
 * as double, decimals as __int128 unscaled values with a scale, dates as days,
 * times and timestamps as int64 in their unit.  EX_T_UNKNOWN is PostgreSQL's
 * "unknown": a quoted literal whose type comes from where it is used
 * ('2024-01-02' next to a date column is a date).
 *
 * Ownership: every node, value and string of a bound expression lives in the
 * expression's arena; fields are borrowed from the schema it was bound to.
 */
#ifndef HS_EXPR_EXPR_INT_H
#define HS_EXPR_EXPR_INT_H

#include "base/arena.h"
#include "base/interval.h"
#include "expr/expr.h"
#include "expr/pgvector.h"

#include <stddef.h>

#define EX_MAX_DEPTH 400          /* nesting of the bound tree */
#define EX_DIV_ROUND 1             /* ARITH '/' aux: round at the type's scale */
#define EX_CHUNK 1024             /* rows per evaluation chunk (selection indices fit uint16_t) */

typedef enum ex_t {
    EX_T_NULL = 0,  /* a bare NULL literal: adopts the type of its context */
    EX_T_UNKNOWN,   /* a quoted literal not yet typed (held as text) */
    EX_T_BOOL,
    EX_T_INT,
    EX_T_FLOAT,
    EX_T_DEC,
    EX_T_STR,
    EX_T_BIN,
    EX_T_DATE,
    EX_T_TS,
    EX_T_TIME,
    EX_T_OTHER,     /* nested column (list, struct, map): only IS [NOT] NULL */
    /* pgvector's types (expr/pgvector.h): values are blobs held in ex_value.s;
     * ex_ty.dim is the type modifier (dimensions, bit length), 0 = none */
    EX_T_VEC,       /* vector(n) */
    EX_T_HALFVEC,   /* halfvec(n) */
    EX_T_SPARSEVEC, /* sparsevec(n) */
    EX_T_BIT,       /* bit(n) / bit varying */
    EX_T_ARRAY,     /* int4[], real[], double precision[], numeric[] (elem = pv_elem):
                     * values of casts to and from the pgvector types; text[]
                     * (elem PV_E_TEXT: expr/textarr.h, expr_textarr.c) */
    EX_T_INTERVAL   /* months, days, microseconds in the 16 bytes of a decimal
                     * (expr_interval.c); dim: the field qualifier's mask */
} ex_t;

static inline bool ex_is_pv(ex_t t) { return t >= EX_T_VEC && t <= EX_T_BIT; }
/* pgvector types and the arrays that cast to them: the pgvector code paths */
static inline bool ex_is_pvx(ex_t t) { return t >= EX_T_VEC && t <= EX_T_ARRAY; }

typedef struct ex_ty {
    ex_t t;
    uint8_t bits;   /* INT: 8/16/32/64; FLOAT: 32/64 */
    uint8_t unit;   /* TS, TIME: hs_time_unit */
    bool tz;        /* TS: with time zone (values are UTC) */
    bool uuid;      /* BIN: 16-byte uuid (literals parse as uuid text) */
    int8_t prec;    /* DEC */
    int8_t scale;   /* DEC */
    int32_t dim;    /* VEC, HALFVEC, SPARSEVEC, BIT: type modifier, 0 = none */
    int8_t elem;    /* ARRAY: pv_elem of the elements */
} ex_ty;

typedef struct ex_str {
    const uint8_t *p;
    size_t n;
} ex_str;

/* One value of an ex_ty (constants, folding). */
typedef struct ex_value {
    bool null;
    int64_t i;       /* BOOL (0/1), INT, DATE, TS, TIME */
    double f;        /* FLOAT */
    __int128 d;      /* DEC (unscaled) */
    ex_str s;        /* STR, BIN, UNKNOWN */
} ex_value;

typedef enum ex_kind {
    EX_CONST = 0, EX_COL, EX_NOT, EX_AND, EX_OR, EX_CMP, EX_DISTINCT, EX_IN, EX_IS_NULL,
    EX_BOOLTEST, EX_LIKE, EX_ARITH, EX_NEG, EX_CAST, EX_CASE, EX_COALESCE, EX_NULLIF, EX_FUNC,
    EX_BETWEEN
} ex_kind;

typedef enum ex_booltest {
    EX_IS_TRUE = 0, EX_IS_NOT_TRUE, EX_IS_FALSE, EX_IS_NOT_FALSE, EX_IS_UNKNOWN, EX_IS_NOT_UNKNOWN
} ex_booltest;

/* How CMP/DISTINCT/IN compare their (already converted) operands. */
typedef enum ex_cmode {
    EX_CM_I64 = 0,   /* INT, DATE, TIME, TS (same unit) */
    EX_CM_F64,       /* FLOAT: NaN equals NaN and sorts above everything */
    EX_CM_I64_F64,   /* INT left, FLOAT right: exact */
    EX_CM_F64_I64,   /* FLOAT left, INT right: exact */
    EX_CM_DEC,       /* DEC, scales may differ: exact */
    EX_CM_BYTES,     /* STR, BIN: unsigned bytes, then length */
    EX_CM_BOOL,      /* BOOL (one byte per row) */
    EX_CM_PV,        /* pgvector types: pv_cmp (btree order) */
    EX_CM_IV         /* intervals: hs_interval_span */
} ex_cmode;

typedef enum ex_fn {
    EX_FN_LOWER = 0, EX_FN_UPPER, EX_FN_LENGTH, EX_FN_ABS, EX_FN_ROUND, EX_FN_FLOOR, EX_FN_CEIL,
    EX_FN_SQRT, EX_FN_STARTS_WITH, EX_FN_SUBSTR, EX_FN_BTRIM, EX_FN_LTRIM, EX_FN_RTRIM,
    EX_FN_CONCAT, EX_FN_DATE_PART, EX_FN_DATE_TRUNC,
    /* string functions of expr_strfn.c (PostgreSQL's semantics, characters
     * of UTF-8 text) */
    EX_FN_REPLACE, EX_FN_STRPOS, EX_FN_LEFT, EX_FN_RIGHT, EX_FN_REPEAT, EX_FN_REVERSE,
    EX_FN_SPLIT_PART,
    /* expr_sqlfn.c and the numeric functions of expr_num.c (PostgreSQL's
     * semantics; docs/sql.md lists the differences) */
    EX_FN_SIGN, EX_FN_TRUNC,
    EX_FN_MATH,          /* aux = ex_math: double precision in and out */
    EX_FN_POWER, EX_FN_LOG2, EX_FN_ATAN2, /* (double, double) -> double */
    EX_FN_DIV,           /* div(numeric, numeric): trunc(a / b), scale 0 */
    EX_FN_NUM_STDDEV,    /* hs_numeric_{var,stddev}_{samp,pop}(count, sum(x), sum(x*x)):
                            PostgreSQL's numeric variance / stddev (plan_rewrite.c);
                            aux bit 0 stddev, bit 1 sample */
    EX_FN_LPAD, EX_FN_RPAD, EX_FN_CONCAT_WS, EX_FN_TRANSLATE, EX_FN_MD5, EX_FN_CHR,
    EX_FN_ASCII, EX_FN_OCTET_LENGTH, EX_FN_BIT_LENGTH, EX_FN_INITCAP, EX_FN_MAKE_DATE,
    EX_FN_REGEX,         /* s ~ p: neg (!~), ci (~*); regexp_like */
    EX_FN_REGEXP_REPLACE, EX_FN_REGEXP_COUNT, EX_FN_REGEXP_SUBSTR,
    EX_FN_TO_CHAR,       /* to_char(timestamp|date|number, fmt) */
    /* arrays (list columns) of expr_bind.c bind_indirection: args[0] is a
     * COL node of a list field */
    EX_FN_ARR_ELEM,      /* a[i] (1-based; NULL outside the array) */
    EX_FN_CARDINALITY,   /* cardinality(a): elements (0 when empty) */
    EX_FN_ARRAY_LENGTH,  /* array_length(a, 1): elements (NULL when empty) */
    EX_FN_ARRAY_TO_STRING, /* array_to_string(a, sep[, null_text]) */
    EX_FN_ARRAY_POSITION,  /* array_position(a, x[, start]): IS NOT DISTINCT FROM */
    EX_FN_LIST_ANY,      /* x op ANY(a) / x op ALL(a) of a list column: args (a, x),
                            aux = pr_op, neg = ALL */
    /* intervals (expr_interval.c ex_interval_justify) */
    EX_FN_JUSTIFY_DAYS, EX_FN_JUSTIFY_HOURS, EX_FN_JUSTIFY_INTERVAL,
    EX_FN_AGE,           /* age(ts, ts): years, months, days and time (timestamp_age) */
    /* pgvector (expr_pgvector.c); the argument types select the kernel */
    EX_FN_PV_DIST,       /* aux = pv_dist: operators <-> <#> <=> <+> <~> <%> and the distance functions */
    EX_FN_PV_DIMS, EX_FN_PV_NORM, EX_FN_PV_NORMALIZE, EX_FN_PV_QUANTIZE, EX_FN_PV_SUBVECTOR,
    EX_FN_PV_ARRAY,      /* ARRAY[...] of numbers: type ARRAY; of text: text[] */
    /* text[] values (expr_textarr.c); args[0] a text[] unless said */
    EX_FN_TA_OF_LIST,    /* a list<string> column (args[0], a COL) as text[] values */
    EX_FN_TA_SPLIT,      /* string_to_array(s, sep[, null_text]) */
    EX_FN_TA_APPEND,     /* array_append(a, x); array_prepend(x, a) binds as aux = 1 (args a, x) */
    EX_FN_TA_CAT,        /* array_cat(a, b), a || b */
    EX_FN_TA_SLICE,      /* a[lo:hi]: args (a, lo, hi), aux bit 0: lo given, bit 1: hi given */
    EX_FN_TA_CONTAINS,   /* a @> b (aux 0), a && b (aux 1) */
    EX_FN_TA_POSITIONS,  /* array_positions(a, x): an integer[] */
    EX_FN_TA_REMOVE,     /* array_remove(a, x) */
    EX_FN_TA_REPLACE,    /* array_replace(a, x, y) */
    /* numeric arrays (expr_numarr.c) */
    EX_FN_NA_OF_LIST,    /* a list column of numbers (args[0], a COL) as a numeric array */
    EX_FN_NA_CAT,        /* a || b of two arrays of one kind, array_cat's NULL rules */
    /* numeric array values (expr_numarr.c); args[0] a numeric array, an
     * element argument x a one-element array of its kind (ARRAY[x]) */
    EX_FN_NA_ELEM,       /* a[i]: args (a, i) */
    EX_FN_NA_SLICE,      /* a[lo:hi]: args (a, lo, hi), aux bit 0: lo given, bit 1: hi given */
    EX_FN_NA_POSITION,   /* array_position(a, x[, start]) (aux 0), array_positions(a, x) (aux 1) */
    EX_FN_NA_TO_STRING,  /* array_to_string(a, sep[, null_text]) */
    EX_FN_NA_ANY,        /* x op ANY / ALL (a): args (a, x), aux = pr_op, neg = ALL */
    EX_FN_NA_CONTAINS,   /* a @> b (aux 0), a && b (aux 1) */
    EX_FN_NA_REMOVE,     /* array_remove(a, x) */
    EX_FN_NA_REPLACE,    /* array_replace(a, x, y) */
    EX_FN_ARR_SHAPE      /* of a numeric or text[] value: array_lower(a, d) (aux 0),
                            array_upper(a, d) (1), array_ndims(a) (2), array_dims(a) (3) */
} ex_fn;

/* EX_FN_MATH functions */
typedef enum ex_math {
    EX_M_EXP = 0, EX_M_LN, EX_M_LOG10, EX_M_CBRT, EX_M_SIN, EX_M_COS, EX_M_TAN, EX_M_ASIN,
    EX_M_ACOS, EX_M_ATAN, EX_M_DEGREES, EX_M_RADIANS
} ex_math;

/* date_part / date_trunc fields */
typedef enum ex_dfield {
    EX_DF_YEAR = 0, EX_DF_QUARTER, EX_DF_MONTH, EX_DF_WEEK, EX_DF_DAY, EX_DF_HOUR, EX_DF_MINUTE,
    EX_DF_SECOND, EX_DF_DOW, EX_DF_DOY, EX_DF_EPOCH, EX_DF_MILLISECOND, EX_DF_MICROSECOND,
    EX_DF_ISODOW, EX_DF_ISOYEAR
} ex_dfield;

/* A compiled LIKE pattern: ops of kind LIT (byte), ONE ('_': one code
 * point), ANY ('%': any run, consecutive ones merged). */
typedef struct ex_like_op {
    uint8_t kind;   /* 0 LIT, 1 ONE, 2 ANY */
    uint8_t byte;
} ex_like_op;
typedef struct ex_like {
    int n;
    ex_like_op *ops;
    /* patterns of literals and '%' only: the literal runs (bytes, lens),
     * matched with memcmp/memmem; n_seg < 0 otherwise */
    int n_seg;
    bool lead_any, trail_any;
    const uint8_t **seg;
    size_t *seg_len;
} ex_like;

/* Sorted constant IN items, for binary search (I64, F64 or BYTES modes). */
typedef struct ex_inset {
    int64_t n;
    int64_t *i;
    double *f;
    ex_str *s;
    bool has_null;    /* a NULL item: a miss is unknown, not false */
    /* BYTES: an open-addressing hash table over s (slot = index + 1, 0 =
     * empty; mask + 1 slots, a power of two at least twice n), used when
     * n > EX_INSET_LINEAR; shorter lists are scanned (length, then bytes) */
    uint32_t *slots;
    uint64_t mask;
    uint64_t *pre;    /* BYTES: the first 8 bytes of each item (ex_str_pre8) */
    uint64_t lens;    /* BYTES: bit k set when an item has k bytes (k < 63); bit 63:
                       * an item of 63 bytes or more */
} ex_inset;

/* The first min(n, 8) bytes of p, zero-padded, as one word: equal strings
 * of equal length have equal words, and strings of at most 8 bytes are
 * equal when their lengths and words are. */
static inline uint64_t ex_str_pre8(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    if (n >= 8) {
        __builtin_memcpy(&v, p, 8);
        return v;
    }
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#define EX_INSET_LINEAR 4
/* The hash of the BYTES set (expr_bind.c builds it, expr_eval.c probes). */
static inline uint64_t ex_str_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

typedef struct ex_node ex_node;
struct ex_node {
    ex_kind kind;
    ex_ty type;         /* result type */
    int loc;              /* byte offset in the text, -1 unknown */
    int op;               /* CMP: pr_op; ARITH: char; BOOLTEST: ex_booltest; FUNC: ex_fn */
    int aux;              /* FUNC date_part/date_trunc: ex_dfield; ROUND: digits;
                             BETWEEN: symmetric; CASE: has a subject */
    ex_cmode cmode;       /* CMP, DISTINCT, IN, NULLIF, BETWEEN, CASE with a subject */
    bool neg;             /* IN, LIKE, IS_NULL, DISTINCT */
    bool ci;              /* LIKE: ILIKE */
    int esc;              /* LIKE: escape byte, -1 none */
    int n_args;
    ex_node **args;
    ex_value val;         /* CONST */
    const hs_field *field;/* COL (borrowed from the schema) */
    int32_t field_id;     /* COL */
    const char *name;     /* COL: dotted name as resolved (arena) */
    const char **path;    /* COL: the field names from the schema root (arena), */
    int path_len;         /*      used to find the column when field_id < 0 */
    int sub;              /* COL: > 0 for a field of a struct column (s).f in SQL: the
                           * top-level column is found by field_id, then the last
                           * `sub` names of path below it */
    int slot;             /* COL: index into the evaluation's column cache */
    int share;            /* > 0: a value shared with equal nodes (ex_share), its
                           * slot + 1 in ex_ctx.share */
    ex_like *pat;         /* LIKE with a constant pattern */
    ex_inset *set;        /* IN with constant items */
};

struct ex_expr {
    hs_arena arena;
    ex_node *root;
    const char *text;        /* the source text (arena copy) for error messages */
    const hs_field *schema;  /* borrowed */
    hs_field type_field;     /* ex_type(e) */
    int n_slots;             /* COL nodes */
};

/* ---- errors (expr_bind.c) ---- */

/* Sets err to "<message> at character N" plus the text with a caret under
 * position loc (a byte offset; no position part when loc < 0). */
hs_status ex_err_at(hs_error *err, hs_status code, const char *text, int loc, const char *fmt,
                    ...) HS_PRINTF(5, 6);

/* ---- binding internals (expr_bind.c; expr_bindfn.c binds function calls,
 * expr_bindarr.c arrays and structs, expr_bindpv.c the pgvector types) ----
 * The binder's state while one expression binds, and the node builders and
 * type rules both files use.  Errors carry the position of the construct. */

struct json_t;

typedef struct ex_binder {
    ex_expr *e;
    const char *query;   /* PREFIX + text */
    size_t query_len;
    hs_error *err;
    int depth;
    const ex_scope *scope;   /* ex_bind_json: resolves columns and whole nodes */
} ex_binder;

static inline bool exb_is_const(const ex_node *n) { return n->kind == EX_CONST; }
static inline bool exb_is_num(ex_t t) { return t == EX_T_INT || t == EX_T_DEC || t == EX_T_FLOAT; }

hs_status exb_nomem(ex_binder *b);
/* The node's "location" as an offset into the user's text (-1 unknown). */
int exb_loc(const struct json_t *body);
hs_status exb_err(ex_binder *b, hs_status code, int loc, const char *fmt, ...) HS_PRINTF(4, 5);
ex_ty exb_ty(ex_t t);                       /* the plain type t (int64, double, ...) */
ex_node *exb_mk(ex_binder *b, ex_kind k, ex_ty t, int loc, int n_args);   /* NULL: no memory */
ex_node *exb_mk_const(ex_binder *b, ex_ty t, int loc);
/* *out = the function call f(a[0..n)) of type t and aux, folded when its
 * arguments are constants (exb_fold, not strict). */
HS_MUST_USE hs_status exb_mk_fn(ex_binder *b, ex_fn f, ex_ty t, int aux, ex_node **a, int n,
                                int loc, ex_node **out);
const char *exb_tname(const ex_ty *t, char *buf);   /* buf: 48 bytes */
/* Replaces *np by a constant when its arguments are constants (strict: an
 * evaluation error is the binding error). */
HS_MUST_USE hs_status exb_fold(ex_binder *b, ex_node **np, bool strict);
/* An explicit cast of *np to t (strict: a constant that does not convert is
 * the error now); coerce: an implicit one (only where PostgreSQL has one). */
HS_MUST_USE hs_status exb_cast_to(ex_binder *b, ex_node **np, ex_ty t, bool strict);
HS_MUST_USE hs_status exb_coerce(ex_binder *b, ex_node **np, ex_ty t);
int exb_int_digits(const ex_ty *t);         /* decimal digits an integer type needs */
ex_ty exb_dec_type(int int_dig, int scale); /* decimal(int_dig + scale, scale), at most 38 */
/* The scale of PostgreSQL's unconstrained numeric for values whose scale
 * the binder cannot know (a cast of a double column, a numeric[] element). */
#define EX_NUMERIC_SCALE 20
/* Binds each node of a JSON list (arena array). */
HS_MUST_USE hs_status exb_list(ex_binder *b, struct json_t *arr, ex_node ***out, int *n_out);
/* The last name of a dotted name list; *qualified_other: qualified by a
 * schema other than pg_catalog. */
const char *exb_last_name(struct json_t *list, bool *qualified_other);
HS_MUST_USE hs_status exb_arith(ex_binder *b, int op, ex_node *l, ex_node *r, int loc, ex_node **out);
/* Binds one libpg_query node (the recursive core of expr_bind.c). */
HS_MUST_USE hs_status exb_bind(ex_binder *b, struct json_t *j, ex_node **out);
/* *np coerced to boolean, else 42804 naming `what` (WHERE, AND, ...). */
HS_MUST_USE hs_status exb_need_bool(ex_binder *b, ex_node **np, const char *what);
/* A node {"Kind": {body}}: its kind and body; false when j is not one. */
bool exb_node_of(struct json_t *j, const char **kind, struct json_t **body);
const char *exb_jstr(struct json_t *o, const char *key);          /* o.key as text, or NULL */
const char *exb_string_node(struct json_t *j, size_t *len);       /* a String node's text */
int exb_parse_cmp_op(const char *s);                               /* "=" -> PR_EQ ..., -1 */

/* expr_bindarr.c: x op ANY/ALL (array); @> <@ && over arrays; (s).f and
 * a[i] (A_Indirection); the COL node of field f of struct column x. */
HS_MUST_USE hs_status exb_any_all(ex_binder *b, struct json_t *body, const char *opname, bool all,
                                  int loc, ex_node **out);
HS_MUST_USE hs_status exb_contains(ex_binder *b, const char *opname, struct json_t *lj,
                                   struct json_t *rj, int loc, ex_node **out);
HS_MUST_USE hs_status exb_indirection(ex_binder *b, struct json_t *body, ex_node **out);
HS_MUST_USE hs_status exb_struct_field(ex_binder *b, const ex_node *x, const hs_field *f, int loc,
                                       ex_node **out);

/* expr_bindpv.c: pgvector's type names and typmods, bit constants,
 * ARRAY[...] of its element types, operators and functions. */
bool exb_pv_typename(const char *nm);
HS_MUST_USE hs_status exb_pv_typmod(ex_binder *b, const char *nm, size_t n_mods, const int64_t *mv,
                                    int loc, ex_ty *out);
HS_MUST_USE hs_status exb_pv_bitconst(ex_binder *b, struct json_t *v, int loc, ex_node **out);
HS_MUST_USE hs_status exb_pv_arraytype(ex_binder *b, struct json_t *tn, int loc, ex_ty *out);
/* ARRAY[...]; cast: the array type it is cast to (NULL: none), which
 * types an empty ARRAY[] or one of NULLs as PostgreSQL does. */
HS_MUST_USE hs_status exb_pv_array(ex_binder *b, struct json_t *body, const ex_ty *cast,
                                   ex_node **out);
bool exb_pv_opname(const char *op);
HS_MUST_USE hs_status exb_pv_op(ex_binder *b, const char *opname, ex_node *l, ex_node *r, int loc,
                                ex_node **out);
bool exb_pv_funcname(const char *fn);
HS_MUST_USE hs_status exb_pv_func(ex_binder *b, const char *fn, struct json_t *args, int loc,
                                  ex_node **out);
/* expr_textarr.c: text[] values (expr/textarr.h).  exb_ta_is: a text[]
 * value or a list<string> column; exb_ta_coerce makes *np a text[] value
 * (a list<string> column through EX_FN_TA_OF_LIST, an unknown literal
 * through array input, NULL typed), false in *ok when it cannot. */
static inline bool ex_is_ta(const ex_ty *t) { return t->t == EX_T_ARRAY && t->elem == PV_E_TEXT; }
bool exb_ta_is(const ex_node *x);
HS_MUST_USE hs_status exb_ta_coerce(ex_binder *b, ex_node **np, bool *ok);
/* every list<string> column among a[0..n) as a text[] value (the operands
 * of IN, BETWEEN, CASE, COALESCE, NULLIF) */
HS_MUST_USE hs_status exb_ta_lift(ex_binder *b, ex_node **a, int n);
/* expr_numarr.c: array_append / array_prepend / array_cat / || over the
 * numeric arrays and list columns of numbers.  exb_na_is: x is one;
 * exb_na_op binds l || r when one side is (exb_na_is); exb_na_func binds
 * the functions (done false when no argument is a numeric array). */
bool exb_na_is(const ex_node *x);
HS_MUST_USE hs_status exb_na_op(ex_binder *b, ex_node *l, ex_node *r, int loc, ex_node **out);
HS_MUST_USE hs_status exb_na_func(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n, int loc,
                                  bool *done, ex_node **out);
/* a[i] / a[lo:hi] of a numeric array value (or a slice of a list column
 * of numbers); x op ANY/ALL (a) of a numeric array value; a @> b / a && b
 * and the comparisons (cmp: pr_op) where a side is a numeric array:
 * PostgreSQL's common element type first. */
HS_MUST_USE hs_status exb_na_subscript(ex_binder *b, ex_node *x, struct json_t *ind, int loc,
                                       ex_node **out);
/* a[i1]..[im] (m > 1 A_Indices of ind from k, none a slice) of a numeric
 * array value x: the element of a multidimensional array (NULL when m is
 * not its number of dimensions) */
HS_MUST_USE hs_status exb_na_subscripts(ex_binder *b, ex_node *x, struct json_t *ind, size_t k, size_t m,
                                        int loc, ex_node **out);
HS_MUST_USE hs_status exb_na_any(ex_binder *b, const char *opname, int op, bool all, ex_node *x,
                                 ex_node *arr, int loc, ex_node **out);
HS_MUST_USE hs_status exb_na_contains(ex_binder *b, bool overlap, ex_node *l, ex_node *r, int loc,
                                      ex_node **out);
HS_MUST_USE hs_status exb_na_cmp(ex_binder *b, const char *opname, int cmp, ex_node *l, ex_node *r,
                                 int loc, ex_node **out);
/* l and r as numeric arrays of their common kind for IS DISTINCT FROM,
 * CASE, COALESCE, IN; *ok false when they are not both arrays of numbers */
HS_MUST_USE hs_status exb_na_unify(ex_binder *b, ex_node **a, int n, bool *ok);
/* "array subscript" and other int4 arguments: unknown / NULL cast,
 * anything but an integer "%s must have type integer" (42804) */
HS_MUST_USE hs_status exb_want_int32(ex_binder *b, ex_node **np, const char *what);
/* ARRAY[...] whose elements are text, unknown literals or NULLs (cast: the
 * text[] it is cast to, or NULL) */
HS_MUST_USE hs_status exb_ta_array(ex_binder *b, ex_node **a, int n, int loc, ex_node **out);
/* l op r for comparisons and || when one side is a text[] (exb_ta_is) */
HS_MUST_USE hs_status exb_ta_op(ex_binder *b, const char *opname, ex_node *l, ex_node *r, int loc,
                                ex_node **out);
/* string_to_array, array_append, array_prepend, array_cat and the array
 * functions of list columns (cardinality, array_length, array_to_string,
 * array_position) given text[] values; *done false when a[0] is none of
 * that (the list-column binding goes on) */
HS_MUST_USE hs_status exb_ta_func(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n,
                                  int loc, bool *done, ex_node **out);
/* a[i] and a[lo:hi] of a text[] value x (ind: the A_Indices body) */
HS_MUST_USE hs_status exb_ta_subscript(ex_binder *b, ex_node *x, struct json_t *ind, int loc,
                                       ex_node **out);
/* a @> b / a && b of text[] values (l, r bound; <@ already swapped) */
HS_MUST_USE hs_status exb_ta_contains(ex_binder *b, bool overlap, ex_node *l, ex_node *r, int loc,
                                      ex_node **out);
/* expr_bindfn.c: a FuncCall node; s ~ p and the other regular expression
 * operators; the functions numbered from EX_FN_SIGN. */
HS_MUST_USE hs_status exb_func(ex_binder *b, struct json_t *body, ex_node **out);
HS_MUST_USE hs_status exb_regex_op(ex_binder *b, const char *opname, ex_node *l, ex_node *r,
                                   int loc, ex_node **out);
HS_MUST_USE hs_status exb_func_more(ex_binder *b, const char *fn, ex_fn f, ex_node **a, int n,
                                     int loc, ex_node **out);

/* ---- types (expr_eval.c) ---- */

const char *ex_type_name(const ex_ty *t, char *buf, size_t n);
/* The hs_field a column of type t has (ex_eval, ex_ty). */
HS_MUST_USE hs_status ex_type_to_field(const ex_ty *t, const char *name, hs_field *out);
/* The expression type of a column of field f (EX_T_OTHER for nested). */
ex_ty ex_type_of_field(const hs_field *f);

/* ---- decimals (expr_num.c) ----
 * Unscaled __int128 values of at most 38 digits (EX_DEC_MAX); the small
 * helpers are inline here because every decimal kernel runs them per row. */

extern const __int128 ex_pow10_tab[39];
#define EX_DEC_MAX (ex_pow10_tab[38] - 1)

/* 10^k for 0 <= k <= 38 (a table: this is in every decimal operation's
 * inner loop). */
static inline __int128 ex_pow10(int k)
{
    if (k >= 0 && k <= 38)
        return ex_pow10_tab[k];
    __int128 r = 1;
    for (int i = 0; i < k; i++)
        r *= 10;
    return r;
}

static inline bool ex_dec_fits(__int128 v) { return v <= EX_DEC_MAX && v >= -EX_DEC_MAX; }

/* v * 10^k with overflow detection (k >= 0). */
static inline bool ex_dec_up(__int128 v, int k, __int128 *out)
{
    if (k <= 0 || v == 0) {
        *out = v;
        return true;
    }
    if (k > 38)
        return false;
    if (v == (int64_t)v && k <= 18) {
        *out = (__int128)(int64_t)v * (int64_t)ex_pow10_tab[k];
        return true;
    }
    return !__builtin_mul_overflow(v, ex_pow10_tab[k], out);
}

/* v / 10^k rounded half away from zero (k >= 0). */
static inline __int128 ex_dec_round(__int128 v, int k)
{
    if (k <= 0)
        return v;
    if (k > 38)
        return 0;
    __int128 p = ex_pow10(k), q = v / p, r = v % p;
    if (r < 0)
        r = -r;
    if (2 * r >= p)
        q += v < 0 ? -1 : 1;
    return q;
}

/* a / 10^sa <=> b / 10^sb: -1, 0, 1 */
static inline int ex_dec_cmp(__int128 a, int sa, __int128 b, int sb)
{
    if (sa < sb) {
        __int128 x;
        if (!ex_dec_up(a, sb - sa, &x))
            return a < 0 ? -1 : 1;
        a = x;
    } else if (sb < sa) {
        __int128 x;
        if (!ex_dec_up(b, sa - sb, &x))
            return b < 0 ? 1 : -1;
        b = x;
    }
    return a < b ? -1 : a > b;
}

double ex_pow10_f(int k);                                  /* 10^k as a double */
__int128 ex_dec_floor(__int128 v, int k, bool ceil_);      /* floor / ceil of v / 10^k */
/* The text of v at scale (buf: 48 bytes); returns its length. */
int ex_dec_format(__int128 v, int scale, char *buf);
/* The double nearest to d / 10^scale. */
double ex_dec_to_double(__int128 d, int scale);
/* PostgreSQL's display scale of the numeric quotient x / y (unscaled values
 * with their scales; select_div_scale). */
int ex_div_scale(__int128 x, int sx, __int128 y, int sy);
/* x / y as numeric: rounded half away from zero at ex_div_scale (or
 * truncated to an integer: trunc_), then given at scale sr.  0: ok; 1:
 * division by zero; 2: the result needs more than 38 digits at scale sr. */
int ex_dec_div(__int128 x, int sx, __int128 y, int sy, int sr, bool trunc_, __int128 *out);
/* ex_dec_div, then rounded half away from zero at sr where PostgreSQL's
 * scale is more (what CAST(x / y AS numeric(p, sr)) gives PostgreSQL). */
int ex_dec_div_round(__int128 x, int sx, __int128 y, int sy, int sr, __int128 *out);
/* PostgreSQL's scale of power(x, y) of two numerics (power_var's rscale). */
int ex_power_scale(__int128 x, int sx, __int128 y, int sy);

/* ---- evaluation internals (expr_eval.c; expr_num.c, expr_cast.c, expr_array.c) ----
 * A node's result for one chunk is an ex_vec: one null byte per row (1 =
 * null) and one value per row in the type's run-time form. */

typedef struct ex_vec {
    uint8_t *nul;           /* EX_CHUNK bytes, 1 = null */
    union {
        uint8_t *b;
        int64_t *i;
        double *f;
        __int128 *d;
        ex_str *s;
        void *p;
    } v;
} ex_vec;

typedef struct ex_col_cache {
    bool looked, found;
    pr_col_ref ref;
} ex_col_cache;

/* A value ex_share marked, computed once per chunk (ex_eval_shared). */
typedef struct ex_share_slot {
    bool valid;
    ex_vec v;
} ex_share_slot;

typedef struct ex_ctx {
    ex_share_slot *share;    /* ex_eval_shared: the shared values, else NULL, */
    hs_arena *share_arena;   /*   the arena they live in (per chunk) */
    int cn;                  /*   and the rows of the chunk */
    const ex_expr *e;
    const hs_batch *b;       /* NULL when folding constants */
    int64_t base;            /* batch row of chunk position 0 */
    hs_arena *arena;         /* per chunk */
    ex_col_cache *cols;      /* e->n_slots entries */
    hs_error *err;
} ex_ctx;

/* Chunk positions still to evaluate, ascending. */
typedef uint16_t ex_sel;

/* Evaluates n on the rows sel[0..ns) into out (a new vector). */
HS_MUST_USE hs_status ex_ev(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out);
/* A vector of type t for one chunk: nulls cleared, values unset. */
HS_MUST_USE hs_status ex_vec_new(ex_ctx *c, ex_t t, ex_vec *v);
/* *dst = a chunk-arena copy of s[0..n). */
HS_MUST_USE hs_status ex_put_str(ex_ctx *c, ex_str *dst, const char *s, size_t n);
/* An evaluation error at n's position in the text (HS_INVALID). */
hs_status ex_fail(ex_ctx *c, const ex_node *n, const char *fmt, ...) HS_PRINTF(3, 4);
/* expr_num.c: row j of the numeric function n (abs, round, floor, ceil,
 * sqrt, sign, trunc, EX_FN_MATH, power, log(b, x), atan2, div, to_char of a
 * number) into out; a[] are its evaluated arguments, none null at j. */
HS_MUST_USE hs_status ex_num_fn(ex_ctx *c, const ex_node *n, const ex_vec *a, int j, ex_vec *out);

/* Bytes of one row of a vector of type t. */
size_t ex_elem_size(ex_t t);
/* v in time unit `from` converted to unit `to`; false on overflow. */
bool ex_unit_convert(int64_t v, int from, int to, int64_t *out);
/* The batch column n (an EX_COL) reads, found once per evaluation. */
HS_MUST_USE hs_status ex_col_ref(ex_ctx *c, const ex_node *n, const pr_col_ref **out);
/* Row j of a and row k of b compared in mode m (-1, 0, 1; NaN last), and
 * that result under comparison operator op (PR_EQ ...) as 0/1. */
int ex_cmp_rows(ex_cmode m, const ex_ty *ta, const ex_vec *a, const ex_ty *tb, const ex_vec *b,
                int j, int k);
uint8_t ex_cmp_res(int op, int c);

/* ---- casts and text forms (expr_cast.c) ---- */

/* The CAST of n over the rows sel[0..ns) of a (of type ft) into out. */
HS_MUST_USE hs_status ex_cast_rows(ex_ctx *c, const ex_node *n, const ex_ty *ft, const ex_vec *a,
                                   const ex_sel *sel, int ns, ex_vec *out);
/* Row j of a (type t) as PostgreSQL's text output, in the chunk arena. */
HS_MUST_USE hs_status ex_to_text(ex_ctx *c, const ex_ty *t, const ex_vec *a, int j, ex_str *dst);
/* "smallint", "integer" or "bigint" for 16, 32, 64 bits. */
const char *ex_int_type_name(int bits);

/* ---- array functions over list columns (expr_array.c) ---- */

/* a[i], cardinality, array_length, array_to_string, array_position and
 * x op ANY/ALL (list) of n over sel[0..ns) into out. */
HS_MUST_USE hs_status ex_ev_array_fn(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns,
                                     ex_vec *out);

/* The text of element i of an array, for ex_array_join: *valid false for
 * a NULL element, else *s its text (borrowed until the next call). */
typedef hs_status (*ex_elem_text_fn)(ex_ctx *c, void *ctx, int64_t i, bool *valid, ex_str *s);
/* array_to_string over elements 0..len (their text from fn) into out's
 * row j: the texts joined by sep; NULL elements are skipped, or written as
 * *null_text when it is not NULL.  Shared by list columns (expr_array.c),
 * text[] (expr_textarr.c) and numeric arrays (expr_numarr.c). */
HS_MUST_USE hs_status ex_array_join(ex_ctx *c, int64_t len, ex_elem_text_fn fn, void *ctx,
                                    const ex_str *sep, const ex_str *null_text, ex_vec *out,
                                    int j);

/* text[] functions (expr_textarr.c): the EX_FN_TA_* functions, ARRAY[...]
 * of text, casts from and to text[], and the functions of expr_array.c
 * given a text[] value (args[0]) */
HS_MUST_USE hs_status ex_ev_ta_fn(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns,
                                  ex_vec *out);
/* the EX_FN_NA_* functions (expr_numarr.c) */
HS_MUST_USE hs_status ex_ev_na_fn(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out);
/* row j of a (type ft) cast to text[] (ft: text, unknown, text[] or a
 * numeric array) or a text[] cast to tt (text or a numeric array) */
HS_MUST_USE hs_status ex_ta_cast(ex_ctx *c, const ex_node *n, const ex_ty *ft, const ex_ty *tt,
                                 const ex_str *v, ex_str *out);

/* ---- evaluation (expr_eval.c) ---- */

/* Evaluates a node whose arguments are all constants; *out gets a value
 * whose strings live in arena.  Errors go to err (positions via e->text). */
HS_MUST_USE hs_status ex_fold(const ex_expr *e, const ex_node *n, hs_arena *arena, ex_value *out,
                              hs_error *err);
/* Appends the SQL text of a non-null constant (for ex_format and leaves). */
HS_MUST_USE hs_status ex_value_text(const ex_ty *t, const ex_value *v, hs_buf *out);
/* Unicode-ish helpers (expr_func.c). */
size_t ex_utf8_len(const uint8_t *p, size_t n);              /* code points */
size_t ex_case_map(const uint8_t *s, size_t n, uint8_t *out, bool upper); /* out >= n bytes */
/* Compiles a LIKE pattern (esc -1 = none; ci lowercases it).  HS_INVALID
 * when it ends with the escape character. */
HS_MUST_USE hs_status ex_like_compile(const uint8_t *p, size_t n, int esc, bool ci,
                                      hs_arena *arena, ex_like *out, hs_error *err);
bool ex_like_match(const ex_like *pat, const uint8_t *s, size_t n);

/* ---- pgvector (expr_pgvector.c; binding in expr_bindpv.c) ----
 * Values of EX_T_VEC..EX_T_BIT are blobs (expr/pgvector.h) in ex_value.s and
 * in the ex_str rows of evaluation vectors. */

/* The pv_type of an EX_T_VEC.. type. */
int ex_pv_type(ex_t t);
/* Columns that read as pgvector types (docs/sql.md, "pgvector types"). */
bool ex_pv_type_of_field(const hs_field *f, ex_ty *out);

/* The pgvector types in evaluation (expr_pgvector.c): reading their column
 * forms, text, casts, the function kernels, and appending to a result. */
HS_MUST_USE hs_status ex_pv_type_to_field(const ex_ty *t, const char *name, hs_field *out);
HS_MUST_USE hs_status ex_pv_read_col(ex_ctx *c, const ex_node *n, const hs_column *col,
                                     const ex_sel *sel, int ns, ex_vec *out);
HS_MUST_USE hs_status ex_pv_text(ex_ctx *c, const ex_ty *t, const ex_str *v, ex_str *dst);
HS_MUST_USE hs_status ex_pv_cast_rows(ex_ctx *c, const ex_node *n, const ex_ty *ft,
                                      const ex_vec *a, const ex_sel *sel, int ns, ex_vec *out);
HS_MUST_USE hs_status ex_pv_ev(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out);
HS_MUST_USE hs_status ex_pv_append(const ex_ty *t, hs_column *col, const ex_str *v);

/* ---- intervals (expr_interval.c) ---- */

/* The value and what every layer does with it (order, hash key, text,
 * arithmetic) live in base/interval.h; the SQL text input and date/timestamp
 * arithmetic here. */
typedef hs_interval ex_interval;
__int128 ex_iv_pack(ex_interval v);
ex_interval ex_iv_unpack(__int128 d);
/* PostgreSQL's interval text; mask: the field of interval 'n' <field>
 * (0 none).  False when the text is not an interval we read; then
 * *out_of_range (may be NULL) says whether a part overflowed (PostgreSQL's
 * 22015 "interval field value out of range") rather than the syntax. */
bool ex_interval_parse(const uint8_t *p, size_t n, int mask, ex_interval *out, bool *out_of_range);
/* True when the text is ISO 8601's alternative format (P0001-02-03T04:05:06,
 * P1, PT04:05), which ex_interval_parse does not read. */
bool ex_interval_iso_alt(const uint8_t *p, size_t n);
/* ts (in unit) + sign * v; false when out of range. */
bool ex_ts_add_interval(int64_t ts, int unit, ex_interval v, int sign, int64_t *out);
/* a - b of two timestamps in unit: days and time (interval_justify_hours). */
ex_interval ex_ts_diff(int64_t a, int64_t b, int unit);
bool ex_interval_part(ex_dfield f, ex_interval v, int64_t *out);
/* justify_days (fn EX_FN_JUSTIFY_DAYS), justify_hours, justify_interval;
 * false when the result is out of range. */
bool ex_interval_justify(int fn, ex_interval v, ex_interval *out);
/* age(a, b) of two timestamps in unit (PostgreSQL's timestamp_age); false
 * when out of range. */
bool ex_ts_age(int64_t a, int64_t b, int unit, ex_interval *out);
double ex_interval_epoch(ex_interval v);

/* ---- dates (expr_func.c) ---- */

int64_t ex_unit_per_sec(int unit);   /* 1, 1e3, 1e6, 1e9 */
int64_t ex_floor_div(int64_t a, int64_t b);
/* date_part of a DATE (days), TS (unit) or TIME (unit) value. */
bool ex_date_part(ex_dfield f, ex_t t, int unit, int64_t v, int64_t *out);
/* date_trunc of a TS value (unit) to field f; false when f cannot truncate. */
bool ex_date_trunc(ex_dfield f, int unit, int64_t v, int64_t *out);
bool ex_dfield_parse(const char *s, size_t n, ex_dfield *out);

/* expr_strfn.c: string functions (see there); results in arena a or
 * slices of the argument.  HS_NOMEM / HS_INVALID (repeat: over 1 GiB) with
 * no message: the caller words the error. */
typedef struct hs_arena hs_arena;
hs_status ex_str_replace(hs_arena *a, const ex_str *s, const ex_str *from, const ex_str *to,
                         ex_str *out);
int64_t ex_str_strpos(const ex_str *s, const ex_str *sub);
void ex_str_left(const ex_str *s, int64_t n, bool right, ex_str *out);
hs_status ex_str_repeat(hs_arena *a, const ex_str *s, int64_t n, ex_str *out);
hs_status ex_str_reverse(hs_arena *a, const ex_str *s, ex_str *out);
void ex_str_split_part(const ex_str *s, const ex_str *d, int64_t n, ex_str *out);

/* expr_sqlfn.c: more of PostgreSQL's functions (see there).  Results live in
 * arena a.  Each returns HS_OK, HS_NOMEM (no message), or HS_INVALID with
 * msg (a buffer of 256 bytes) set to PostgreSQL's message; *state (when
 * given) gets the SQLSTATE of that message. */
hs_status ex_str_pad(hs_arena *a, const ex_str *s, int64_t len, const ex_str *fill, bool left,
                     ex_str *out);
hs_status ex_str_translate(hs_arena *a, const ex_str *s, const ex_str *from, const ex_str *to,
                           ex_str *out);
hs_status ex_str_md5(hs_arena *a, const ex_str *s, ex_str *out);
hs_status ex_str_chr(hs_arena *a, int64_t cp, ex_str *out, char *msg);
int64_t ex_str_ascii(const ex_str *s);
hs_status ex_str_initcap(hs_arena *a, const ex_str *s, ex_str *out);
/* make_date: days since 1970-01-01; false (msg set) when out of range */
bool ex_make_date(int64_t y, int64_t m, int64_t d, int64_t *days, char *msg);

/* Regular expressions: PostgreSQL's pattern text translated to POSIX ERE
 * (regcomp; see expr_sqlfn.c for what differs from PostgreSQL's ARE).
 * flags: PostgreSQL's flag letters ('i', 'c', 'g', 'n'...); *global gets 'g'. */
typedef struct ex_regex ex_regex;
hs_status ex_regex_compile(const ex_str *pat, bool ci, const ex_str *flags, ex_regex **out,
                           bool *global, char *msg);
void ex_regex_free(ex_regex *r);
/* 1 match, 0 no match, -1 error (msg) */
int ex_regex_find(ex_regex *r, const ex_str *s, size_t from, size_t *m0, size_t *m1,
                  size_t groups[20], char *msg);
hs_status ex_regex_replace(hs_arena *a, ex_regex *r, const ex_str *s, const ex_str *rep,
                           bool global, ex_str *out, char *msg);

/* to_char: fmt applied to a timestamp (unit: hs_time_unit; a date is
 * passed as a timestamp). */
hs_status ex_to_char_ts(hs_arena *a, int64_t v, int unit, const ex_str *fmt, ex_str *out, char *msg);
/* to_char of a number: the template's fraction digits (-1: msg, 0A000;
 * -3: msg, 42601), then the text of the value given as its sign, integer
 * digits (no leading zeros, "" for zero) and exactly that many fraction
 * digits (already rounded). */
int ex_to_char_frac_digits(const ex_str *fmt, char *msg);
hs_status ex_to_char_num(hs_arena *a, bool neg, const char *ip, const char *fp, const ex_str *fmt,
                         int float_post, ex_str *out);

#endif
