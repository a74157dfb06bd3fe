/*
 * expr/pred.h - simple row filters: the text form, binding to a schema,
 * exact evaluation over column batches, and "might match" evaluation over
 * statistics (data-file bounds, partition values, manifest summaries).
 *
 * Text grammar (keywords case-insensitive):
 *
 *   expr   := or
 *   or     := and { OR and }
 *   and    := unary { AND unary }
 *   unary  := NOT unary | '(' expr ')' | pred
 *   pred   := col op lit | lit op col | col [NOT] IN '(' lit {, lit} ')'
 *           | col IS [NOT] NULL | TRUE | FALSE
 *   op     := = | == | != | <> | < | <= | > | >=
 *   col    := name { '.' name }  (names: [A-Za-z_][A-Za-z0-9_]*, or "quoted", or `quoted`)
 *   lit    := [-+]number | 'string' ('' escapes ') | TRUE | FALSE
 *
 * After parsing, NOT is pushed down to the leaves (negation normal form):
 * NOT(a < 1) = a >= 1 and NOT(a IS NULL) = a IS NOT NULL, which is exact
 * under SQL's three-valued logic because every comparison with a null is
 * unknown either way.  So the tree holds only AND, OR and leaves.
 *
 * Values.  Every comparable column value is read as a pr_val of one kind:
 *
 *   column type                          kind    held as
 *   -----------------------------------  ------  ---------------------------------
 *   BOOL, INT8..UINT64, DATE32 (days),   I64     the integer (time and timestamp
 *   TIME32/64, TIMESTAMP                         in the column's own unit)
 *   FLOAT16/32/64                        F64     the double
 *   DECIMAL128(p, s)                     I128    unscaled value, scale s
 *   STRING, BINARY, FIXED_BINARY         BYTES   pointer + length (borrowed);
 *                                                compared as unsigned bytes, which
 *                                                is code-point order for UTF-8
 *
 * Binding converts each literal to its column's kind ('2024-01-02' to days
 * for a date column, to the unit for timestamps, '..-..-..' to 16 bytes for
 * a uuid column, 1.5 to F64 against an integer column: I64 and F64 compare
 * mixed, exactly).  Leaves remember the column's field id, so batches and
 * statistics are matched by id and survive renames.
 *
 * Ownership: a pr_filter owns its tree (one arena); bound leaves borrow the
 * hs_field they were bound to, so the schema passed to pr_filter_bind must
 * outlive the filter's use.
 */
#ifndef HS_EXPR_PRED_H
#define HS_EXPR_PRED_H

#include "base/arena.h"
#include "base/error.h"
#include "columnar/column.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum pr_vkind { PR_V_NULL = 0, PR_V_I64, PR_V_F64, PR_V_I128, PR_V_BYTES } pr_vkind;

typedef struct pr_val {
    pr_vkind kind;
    int32_t scale;            /* I128 */
    int64_t i;                /* I64 */
    double f;                 /* F64 */
    __int128 d;               /* I128 */
    const uint8_t *p;         /* BYTES (borrowed) */
    size_t n;
} pr_val;

typedef enum pr_ekind {
    PR_E_TRUE = 0, PR_E_FALSE, PR_E_AND, PR_E_OR,
    PR_E_CMP, PR_E_IN, PR_E_NOT_IN, PR_E_IS_NULL, PR_E_NOT_NULL,
    PR_E_NOT  /* only before normalisation */
} pr_ekind;

typedef enum pr_op { PR_EQ = 0, PR_NE, PR_LT, PR_LE, PR_GT, PR_GE } pr_op;

typedef enum pr_lkind { PR_L_INT = 0, PR_L_FLOAT, PR_L_STR, PR_L_BOOL } pr_lkind;

typedef struct pr_lit {
    pr_lkind kind;
    int64_t i;                /* INT, BOOL */
    double f;                 /* FLOAT (and INT as double) */
    const char *s;            /* STR: unescaped text; INT/FLOAT: the number's text */
    size_t n;
} pr_lit;

typedef struct pr_expr pr_expr;
struct pr_expr {
    pr_ekind kind;
    pr_op op;                /* CMP */
    const char *column;       /* leaves: dotted name as written */
    int n_lits;
    pr_lit *lits;
    pr_expr *l, *r;          /* AND/OR (r), NOT (l) */
    /* after pr_filter_bind: */
    int32_t field_id;
    const hs_field *field;    /* borrowed from the bound schema */
    pr_val *vals;            /* n_lits values of the column's kind */
};

typedef struct pr_filter {
    hs_arena arena;
    pr_expr *root;
    bool bound;
} pr_filter;

/* Parses text (NULL or blank = TRUE).  Caller frees *out with pr_filter_free. */
HS_MUST_USE hs_status pr_filter_parse(const char *text, pr_filter **out, hs_error *err);
void pr_filter_free(pr_filter *f);  /* accepts NULL */
/* Resolves column names against schema (a STRUCT; borrowed, see top) and
 * converts literals.  HS_NOT_FOUND for an unknown column, HS_INVALID for a
 * literal that does not fit its column or a column that is not comparable. */
HS_MUST_USE hs_status pr_filter_bind(pr_filter *f, const hs_field *schema, hs_error *err);
/* True when the filter is the constant TRUE (matches everything). */
bool pr_filter_is_true(const pr_filter *f);
/* Field ids the filter reads (each once), appended to ids (int32_t vector). */
HS_MUST_USE hs_status pr_filter_field_ids(const pr_filter *f, hs_buf *ids);

/* Exact evaluation over b (columns found by field id; a column absent from
 * the batch reads as all null).  sel[i] = 1 when row i matches, else 0.
 * sel has b->n_rows entries.  Returns the number of matching rows in *n_match. */
HS_MUST_USE hs_status pr_filter_eval(const pr_filter *f, const hs_batch *b, uint8_t *sel,
                                      int64_t *n_match, hs_error *err);

/* Statistics of one column over a set of rows (a file, a partition tuple, a
 * manifest).  Counts are -1 when unknown; bounds absent when has_* false. */
typedef struct pr_col_stats {
    bool has_lower, has_upper;
    pr_val lower, upper;     /* inclusive; in the column's kind */
    int64_t value_count;      /* rows, nulls included */
    int64_t null_count;
    int64_t nan_count;
} pr_col_stats;
/* Fills *out for field_id; returns false when nothing is known (the column
 * may hold anything). */
typedef bool (*pr_stats_fn)(void *ctx, int32_t field_id, const hs_field *field,
                             pr_col_stats *out);
/* False only when no row described by the statistics can match. */
bool pr_expr_might_match(const pr_expr *e, pr_stats_fn fn, void *ctx);

/* Values. */
pr_vkind pr_kind_of(const hs_field *f);  /* PR_V_NULL = not comparable */
/* Reads row `row` of column c (type f) as a value; false when null. */
bool pr_val_get(const hs_field *f, const hs_column *c, int64_t row, pr_val *out);
/* Three-way compare of two non-null values (mixed I64/F64/I128 compare by
 * value); NaN compares greater than everything. */
int pr_val_cmp(const pr_val *a, const pr_val *b);
/* Decodes Iceberg's single-value binary form of a bound (untrusted bytes,
 * borrowed by BYTES values) for a column of type f.  False when the bytes do
 * not fit the type (the bound is then ignored). */
bool pr_val_from_bound(const hs_field *f, const uint8_t *p, size_t n, pr_val *out);
/* Encodes v (of column type f) in the single-value binary form, appended to out. */
HS_MUST_USE hs_status pr_val_to_bound(const hs_field *f, const pr_val *v, hs_buf *out);

/* Text of dates and times (used for literals): days since the epoch, and
 * timestamps in the given unit ("2024-01-02T03:04:05.123456", optional
 * "Z" or "+hh:mm" offset, ' ' allowed for 'T').  False on bad text. */
bool pr_parse_date(const char *s, size_t n, int64_t *days);
bool pr_parse_timestamp(const char *s, size_t n, hs_time_unit unit, int64_t *out);
bool pr_parse_time(const char *s, size_t n, hs_time_unit unit, int64_t *out);

/* Finds the column of field_id in batch b: *col and the chain of parent
 * struct columns (to check validity) up to depth 8.  False when absent. */
typedef struct pr_col_ref {
    const hs_column *col;
    const hs_field *field;
    int n_parents;
    const hs_column *parents[8];
} pr_col_ref;
bool pr_batch_find_id(const hs_batch *b, int32_t field_id, pr_col_ref *out);
static inline bool pr_ref_valid(const pr_col_ref *r, int64_t row)
{
    for (int k = 0; k < r->n_parents; k++)
        if (!hs_col_is_valid(r->parents[k], row))
            return false;
    return hs_col_is_valid(r->col, row);
}

/* Total orders of numbers as SQL compares them (-1, 0, 1), shared by the
 * predicate form here and the evaluator (expr_eval.c): NaN equals NaN and
 * sorts above everything (PostgreSQL, DuckDB); an integer against a double
 * compares exactly (no rounding of the integer to double). */
static inline int pr_cmp_f64(double a, double b)
{
    if (a < b)
        return -1;
    if (a > b)
        return 1;
    if (a == b)
        return 0;
    bool na = isnan(a), nb = isnan(b);
    return na == nb ? 0 : na ? 1 : -1;
}

static inline int pr_cmp_i64_f64(int64_t a, double b)
{
    if (isnan(b) || b >= 9223372036854775808.0)
        return -1;
    if (b < -9223372036854775808.0)
        return 1;
    double fl = floor(b);
    int64_t bi = (int64_t)fl;
    if (a < bi)
        return -1;
    if (a > bi)
        return 1;
    return fl == b ? 0 : -1;
}

#endif
