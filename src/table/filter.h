/*
 * table/filter.h - simple row filters: the text form, binding to a schema,
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
 * Values.  Every comparable column value is read as a tbl_val of one kind:
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
 * Ownership: a tbl_filter owns its tree (one arena); bound leaves borrow the
 * hs_field they were bound to, so the schema passed to tbl_filter_bind must
 * outlive the filter's use.
 */
#ifndef HS_TABLE_FILTER_H
#define HS_TABLE_FILTER_H

#include "base/arena.h"
#include "base/error.h"
#include "columnar/column.h"
#include <stdbool.h>
#include <stdint.h>

typedef enum tbl_vkind { TBL_V_NULL = 0, TBL_V_I64, TBL_V_F64, TBL_V_I128, TBL_V_BYTES } tbl_vkind;

typedef struct tbl_val {
    tbl_vkind kind;
    int32_t scale;            /* I128 */
    int64_t i;                /* I64 */
    double f;                 /* F64 */
    __int128 d;               /* I128 */
    const uint8_t *p;         /* BYTES (borrowed) */
    size_t n;
} tbl_val;

typedef enum tbl_ekind {
    TBL_E_TRUE = 0, TBL_E_FALSE, TBL_E_AND, TBL_E_OR,
    TBL_E_CMP, TBL_E_IN, TBL_E_NOT_IN, TBL_E_IS_NULL, TBL_E_NOT_NULL,
    TBL_E_NOT  /* only before normalisation */
} tbl_ekind;

typedef enum tbl_op { TBL_EQ = 0, TBL_NE, TBL_LT, TBL_LE, TBL_GT, TBL_GE } tbl_op;

typedef enum tbl_lkind { TBL_L_INT = 0, TBL_L_FLOAT, TBL_L_STR, TBL_L_BOOL } tbl_lkind;

typedef struct tbl_lit {
    tbl_lkind kind;
    int64_t i;                /* INT, BOOL */
    double f;                 /* FLOAT (and INT as double) */
    const char *s;            /* STR: unescaped text; INT/FLOAT: the number's text */
    size_t n;
} tbl_lit;

typedef struct tbl_expr tbl_expr;
struct tbl_expr {
    tbl_ekind kind;
    tbl_op op;                /* CMP */
    const char *column;       /* leaves: dotted name as written */
    int n_lits;
    tbl_lit *lits;
    tbl_expr *l, *r;          /* AND/OR (r), NOT (l) */
    /* after tbl_filter_bind: */
    int32_t field_id;
    const hs_field *field;    /* borrowed from the bound schema */
    tbl_val *vals;            /* n_lits values of the column's kind */
};

typedef struct tbl_filter {
    hs_arena arena;
    tbl_expr *root;
    bool bound;
} tbl_filter;

/* Parses text (NULL or blank = TRUE).  Caller frees *out with tbl_filter_free. */
HS_MUST_USE hs_status tbl_filter_parse(const char *text, tbl_filter **out, hs_error *err);
void tbl_filter_free(tbl_filter *f);  /* accepts NULL */
/* Resolves column names against schema (a STRUCT; borrowed, see top) and
 * converts literals.  HS_NOT_FOUND for an unknown column, HS_INVALID for a
 * literal that does not fit its column or a column that is not comparable. */
HS_MUST_USE hs_status tbl_filter_bind(tbl_filter *f, const hs_field *schema, hs_error *err);
/* True when the filter is the constant TRUE (matches everything). */
bool tbl_filter_is_true(const tbl_filter *f);
/* Field ids the filter reads (each once), appended to ids (int32_t vector). */
HS_MUST_USE hs_status tbl_filter_field_ids(const tbl_filter *f, hs_buf *ids);

/* Exact evaluation over b (columns found by field id; a column absent from
 * the batch reads as all null).  sel[i] = 1 when row i matches, else 0.
 * sel has b->n_rows entries.  Returns the number of matching rows in *n_match. */
HS_MUST_USE hs_status tbl_filter_eval(const tbl_filter *f, const hs_batch *b, uint8_t *sel,
                                      int64_t *n_match, hs_error *err);

/* Statistics of one column over a set of rows (a file, a partition tuple, a
 * manifest).  Counts are -1 when unknown; bounds absent when has_* false. */
typedef struct tbl_col_stats {
    bool has_lower, has_upper;
    tbl_val lower, upper;     /* inclusive; in the column's kind */
    int64_t value_count;      /* rows, nulls included */
    int64_t null_count;
    int64_t nan_count;
} tbl_col_stats;
/* Fills *out for field_id; returns false when nothing is known (the column
 * may hold anything). */
typedef bool (*tbl_stats_fn)(void *ctx, int32_t field_id, const hs_field *field,
                             tbl_col_stats *out);
/* False only when no row described by the statistics can match. */
bool tbl_expr_might_match(const tbl_expr *e, tbl_stats_fn fn, void *ctx);

/* Values. */
tbl_vkind tbl_kind_of(const hs_field *f);  /* TBL_V_NULL = not comparable */
/* Reads row `row` of column c (type f) as a value; false when null. */
bool tbl_val_get(const hs_field *f, const hs_column *c, int64_t row, tbl_val *out);
/* Three-way compare of two non-null values (mixed I64/F64/I128 compare by
 * value); NaN compares greater than everything. */
int tbl_val_cmp(const tbl_val *a, const tbl_val *b);
/* Decodes Iceberg's single-value binary form of a bound (untrusted bytes,
 * borrowed by BYTES values) for a column of type f.  False when the bytes do
 * not fit the type (the bound is then ignored). */
bool tbl_val_from_bound(const hs_field *f, const uint8_t *p, size_t n, tbl_val *out);
/* Encodes v (of column type f) in the single-value binary form, appended to out. */
HS_MUST_USE hs_status tbl_val_to_bound(const hs_field *f, const tbl_val *v, hs_buf *out);

/* Text of dates and times (used for literals): days since the epoch, and
 * timestamps in the given unit ("2024-01-02T03:04:05.123456", optional
 * "Z" or "+hh:mm" offset, ' ' allowed for 'T').  False on bad text. */
bool tbl_parse_date(const char *s, size_t n, int64_t *days);
bool tbl_parse_timestamp(const char *s, size_t n, hs_time_unit unit, int64_t *out);
bool tbl_parse_time(const char *s, size_t n, hs_time_unit unit, int64_t *out);

/* Finds the column of field_id in batch b: *col and the chain of parent
 * struct columns (to check validity) up to depth 8.  False when absent. */
typedef struct tbl_col_ref {
    const hs_column *col;
    const hs_field *field;
    int n_parents;
    const hs_column *parents[8];
} tbl_col_ref;
bool tbl_batch_find_id(const hs_batch *b, int32_t field_id, tbl_col_ref *out);
static inline bool tbl_ref_valid(const tbl_col_ref *r, int64_t row)
{
    for (int k = 0; k < r->n_parents; k++)
        if (!hs_col_is_valid(r->parents[k], row))
            return false;
    return hs_col_is_valid(r->col, row);
}

#endif
