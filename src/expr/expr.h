/*
 * expr/expr.h - filter expressions: SQL WHERE text parsed by libpg_query,
 * bound against a schema into one expression tree, evaluated vectorized over
 * column batches with SQL three-valued logic.
 *
 * This is the tree that every front end binds into (filter strings, SQL,
 * the OpenSearch query DSL, Qdrant filters), and the one the planner reads.
 *
 * Text.  Anything PostgreSQL accepts after WHERE, of which we bind:
 *   comparisons = <> != < <= > >= (and == as =), AND / OR / NOT,
 *   [NOT] IN (list), [NOT] BETWEEN a AND b, IS [NOT] NULL, IS [NOT] TRUE/FALSE,
 *   [NOT] LIKE / ILIKE (with % and _ wildcards; ESCAPE '\' default),
 *   arithmetic + - * / % and unary minus, CAST(x AS t) and x::t,
 *   CASE WHEN, COALESCE, NULLIF,
 *   functions: lower, upper, length / char_length, abs, round, floor, ceil,
 *   sqrt, starts_with, substr / substring, trim, concat (||), date_part /
 *   extract(year|month|day|hour|minute|second|dow|doy from x), date_trunc,
 *   literals: integers, decimals, floats (also 'NaN'::double), 'strings',
 *   true/false/null, DATE 'YYYY-MM-DD', TIMESTAMP '...', TIMESTAMPTZ '...',
 *   INTERVAL '...' (expr_interval.c: date/timestamp +- interval, timestamp -
 *   timestamp, interval arithmetic, comparisons, extract; an interval
 *   result is an HS_TYPE_INTERVAL column), (s).f of a struct column and
 *   a[i], cardinality(a), array_length(a, 1) of a list column.
 * pgvector 0.8.1: the types vector(n), halfvec(n), sparsevec(n) and bit(n),
 * their literals ('[1,2]'::vector, B'101'), casts, the operators <-> <#> <=>
 * <+> <~> <%> + - * || and comparisons, and pgvector's functions, exactly as
 * PostgreSQL 15 with pgvector 0.8.1 (expr/pgvector.h; docs/sql.md, "pgvector
 * types", lists them and the column forms: list<float32> is a vector).
 * Columns: name, "Quoted Name", nested struct fields by dotted name (s.a).
 * Errors (HS_INVALID, HS_NOT_FOUND for unknown columns, HS_UNSUPPORTED for
 * constructs we do not bind) carry a message that quotes the text and points
 * at the offending position, e.g.
 *     unknown column "nme" at character 5
 *       id > 1 AND nme = 'x'
 *                  ^
 *
 * Semantics follow PostgreSQL and DuckDB (the differential-test oracle):
 * NULL propagates through operators and functions; AND/OR/NOT are Kleene
 * three-valued; a row passes a filter only when it evaluates to TRUE.
 * Floats: NaN = NaN is true and NaN sorts above every other value (as
 * pr_val_cmp).  Integer arithmetic is int64 with overflow an error
 * (HS_INVALID "integer out of range"); int / int truncates; division by
 * zero is an error.  Mixed int/float compares exactly.  Strings compare as
 * unsigned bytes (code-point order).  Dates/timestamps compare with string
 * literals by converting the literal ('2024-01-02').
 *
 * Where PostgreSQL and DuckDB differ, this module follows DuckDB for values
 * and PostgreSQL for errors: decimal / decimal is a decimal at PostgreSQL's
 * scale (docs/sql.md, "Numbers"); double % double
 * is fmod (x % 0 is NaN); double overflow is +-Infinity, not an error;
 * sqrt of a negative number is NaN; round(double) rounds half to even as
 * PostgreSQL's rint (round(x, n), which PostgreSQL lacks, scales by 10^n and
 * rounds half away from zero); floor/ceil of an integer is a double;
 * extract(second ...) is the whole seconds (epoch is a double with the
 * fraction); substr takes code points, and a start below 1 counts positions
 * before the first character (PostgreSQL; DuckDB counts negative starts from
 * the end); a date compared with '2024-01-02 10:00' drops the time (both);
 * text to integer does not accept '1.5' (PostgreSQL).  Casting a double to
 * text prints the shortest text that reads back ('100', not DuckDB's
 * '100.0').  lower/upper/ILIKE map case per code point for Latin, Greek,
 * Cyrillic and Armenian letters; characters whose case forms change length
 * (German sharp s) stay as they are.  Errors that depend on evaluation
 * order (division by zero, overflow, failing casts) happen only for rows
 * that are evaluated: AND, OR, CASE and COALESCE evaluate their arguments
 * left to right, each only on the rows that are still undecided, and a
 * constant FALSE term of an AND (TRUE of an OR) is folded so the other terms
 * never run (DuckDB's optimizer may still skip more).
 *
 * Parsing is libpg_query's (PostgreSQL 15 grammar) with the text placed after
 * "SELECT 1 FROM t WHERE "; anything else in the statement (a second
 * statement, ORDER BY, UNION, ...) is HS_INVALID.  Text is limited to 16 MiB
 * and 400 levels of nesting.  expr_fastparse.h parses the common simple forms
 * by hand into the same tree (ex_parse_filter_fast: same result, a few
 * microseconds instead of libpg_query's tens).
 *
 * Ownership: an ex_expr owns its tree (one arena); a bound expression
 * borrows the hs_field schema it was bound to, which must outlive it.
 * Threads: evaluation only reads the expression, so one ex_expr may be
 * evaluated by several threads at once.
 */
#ifndef HS_EXPR_EXPR_H
#define HS_EXPR_EXPR_H

#include "base/error.h"
#include "base/interval.h"
#include "columnar/column.h"
#include "expr/pred.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct ex_expr ex_expr;

/* Parses and binds `text` against `schema` (a STRUCT; borrowed, see top).
 * NULL or blank text is the constant TRUE.  The expression must be boolean
 * (HS_INVALID otherwise).  Caller frees *out with ex_free. */
HS_MUST_USE hs_status ex_parse_filter(const char *text, const hs_field *schema, ex_expr **out,
                                      hs_error *err);
/* Parses and binds a scalar expression of any type (for SQL select lists). */
HS_MUST_USE hs_status ex_parse_scalar(const char *text, const hs_field *schema, ex_expr **out,
                                      hs_error *err);
void ex_free(ex_expr *e);  /* accepts NULL */

/* Binding one expression node of a whole SQL statement (src/sql/).
 *
 * node is a libpg_query JSON node ({"A_Expr": {...}}) of a statement whose
 * text is `text` (its locations are byte offsets into text, which error
 * messages quote).  Columns come from the scope:
 *   - column(ctx, names, n) resolves a ColumnRef of n names (identifiers as
 *     the parser gives them: unquoted ones folded to lower case) to the
 *     0-based index of a child of schema, or returns -1 (unknown: error
 *     "column "x" does not exist", HS_NOT_FOUND, SQLSTATE 42703) or -2
 *     (ambiguous: "column reference "x" is ambiguous", HS_INVALID, 42702);
 *   - node(ctx, node, &col, err) (may be NULL) is asked first about every
 *     node: setting col >= 0 binds the whole node as that column (how the
 *     planner refers to aggregates, GROUP BY expressions and subquery
 *     results); a status other than HS_OK fails the binding.
 * The schema (a STRUCT whose children carry field ids 1..n, as operator
 * schemas do) is borrowed and must outlive the expression.  filter: the
 * expression must be boolean (NULL/unknown become boolean).  Caller frees
 * *out with ex_free. */
struct json_t;
typedef struct ex_scope {
    const hs_field *schema;
    int (*column)(void *ctx, const char *const *names, int n);
    hs_status (*node)(void *ctx, const struct json_t *node, int *col, hs_error *err);
    void *ctx;
    /* the expression may be a bare nested column (list, struct, map): the
     * argument of count or array_agg, which pass it through; otherwise
     * such a result is 0A000 "expressions cannot return nested columns" */
    bool nested_ok;
} ex_scope;
HS_MUST_USE hs_status ex_bind_json(const struct json_t *node, const char *text,
                                   const ex_scope *scope, bool filter, ex_expr **out,
                                   hs_error *err);

/* The metadata key that tags a field holding one of pgvector's types (value
 * "vector", "halfvec", "sparsevec" or "bit"): result fields of pgvector
 * expressions carry it. */
#define EX_PV_META "pgvector.type"

/* The result type of a bound expression (borrowed from e). */
const hs_field *ex_type(const ex_expr *e);
/* True when the filter is the constant TRUE. */
bool ex_is_true(const ex_expr *e);
/* True when the filter is an AND (or one term) of comparisons, BETWEEN,
 * IN of constants and IS NULL over fixed-width columns and constants: a
 * few nanoseconds a row, and it cannot fail (the terms an AND runs first). */
bool ex_is_cheap(const ex_expr *e);
/* When e is a bare reference to a top-level column of b whose layout is that
 * of e's result (same type, scale, unit, width; no pgvector form), b's
 * column (its first b->n_rows rows are e's result); else NULL.  Lets a
 * projection pass a column through instead of evaluating it row by row. */
const hs_column *ex_passthrough(const ex_expr *e, const hs_batch *b);
/* Field ids the expression reads (each once), appended to ids (int32_t vector). */
HS_MUST_USE hs_status ex_field_ids(const ex_expr *e, hs_buf *ids);
/* The field id of the column e is, when e is a bare reference to a
 * top-level primitive column of its schema with the column's own type (no
 * cast); else -1. */
int32_t ex_column_id(const ex_expr *e);

/* Terms judged by value.  A filter is an AND of ex_and_terms(e) terms (one
 * when its root is no AND).  ex_term_value_col: the field id of the one
 * top-level string or binary column that term t reads, when t is a function
 * of that column's value alone that cannot fail on any value (string
 * comparisons with constants, IN of constants, LIKE/ILIKE of a constant
 * pattern, IS [NOT] NULL, NOT/AND/OR of those), else -1: such a term can be
 * judged once per distinct value (a Parquet dictionary) instead of per row.
 * ex_term_field_ids: the field ids term t reads (appended to ids).
 * ex_terms_expr: a new filter, the AND of the terms t with keep[t] and of
 * the boolean columns cols[0..n_cols) (each a term: TRUE rows pass); it
 * borrows e's nodes and the cols fields (both must outlive it); caller
 * frees it with ex_free. */
int ex_and_terms(const ex_expr *e);
int32_t ex_term_value_col(const ex_expr *e, int t);
HS_MUST_USE hs_status ex_term_field_ids(const ex_expr *e, int t, hs_buf *ids);
HS_MUST_USE hs_status ex_terms_expr(const ex_expr *e, const bool *keep,
                                    const hs_field *const *cols, int n_cols, ex_expr **out,
                                    hs_error *err);

/* Filter evaluation over batch b (columns found by field id with
 * pr_batch_find_id, or by their names when the bound field has no id; a
 * column absent from the batch reads as all null).
 * sel_in (may be NULL = all rows) restricts which rows are evaluated; rows
 * not in sel_in get sel_out[i] = 0.  sel_out[i] = 1 when row i evaluates to
 * TRUE.  sel_in and sel_out may be the same array.  *n_match = count of 1s. */
HS_MUST_USE hs_status ex_eval_filter(const ex_expr *e, const hs_batch *b, const uint8_t *sel_in,
                                     uint8_t *sel_out, int64_t *n_match, hs_error *err);
/* Scalar evaluation: a new column of ex_type(e) with b->n_rows rows (caller
 * frees with hs_col_free). */
HS_MUST_USE hs_status ex_eval(const ex_expr *e, const hs_batch *b, hs_column **out,
                              hs_error *err);

/* Common subexpressions.  ex_share marks every subexpression (not a bare
 * column or constant) that occurs more than once among exprs[0..n) (all
 * bound to one schema), in one of them or in several, as one value:
 * ex_eval_shared then computes it once per chunk of rows and hands the
 * others a copy.  A value is only computed where its expression is
 * evaluated for every row of the chunk (not only for the rows a CASE,
 * AND, OR or COALESCE leaves), so no row is evaluated that would not be
 * without sharing (errors stay the same).  Returns how many values are
 * shared (0: nothing to gain; ex_eval then).  A volatile expression
 * (none today: random() and friends are not bound, expr_bindfn.c) would
 * never be shared.  Marks the nodes: call before evaluating, once. */
int ex_share(ex_expr *const *exprs, int n);
/* Evaluates exprs[i] over b into out[i] for every i with !skip[i]
 * (skip may be NULL), the values ex_share marked computed once per chunk.
 * Caller frees the columns (on failure none are left). */
HS_MUST_USE hs_status ex_eval_shared(ex_expr *const *exprs, int n, int n_shared,
                                     const hs_batch *b, const bool *skip, hs_column **out,
                                     hs_error *err);

/* The pruning and index view.  Converts a bound boolean expression into a
 * bound pr_filter (AND / OR / NOT-free leaves: CMP, IN, NOT_IN, IS_NULL,
 * NOT_NULL, TRUE, FALSE; see expr/pred.h) that is IMPLIED BY e: every row
 * for which e is TRUE also satisfies the result.  Parts that have no such
 * form become TRUE (after NOT has been pushed to the leaves, so that this is
 * sound); BETWEEN becomes two comparisons; LIKE 'abc%' becomes
 * col >= 'abc' AND col < 'abd'; `col op constant-expression` is folded.
 * *exact is set when the result is equivalent to e (nothing was widened),
 * so that a caller may skip residual evaluation.  The pr_filter is bound
 * to the same schema; caller frees *out with pr_filter_free. */
HS_MUST_USE hs_status ex_to_pred(const ex_expr *e, pr_filter **out, bool *exact,
                                       hs_error *err);

/* ts (a timestamp in unit) + v as PostgreSQL's timestamp + interval
 * (months first, clamped to the month's last day, then days, then the
 * time); false when out of range.  For operators that step through
 * timestamps (exec/srf.c: generate_series). */
bool ex_timestamp_add_interval(int64_t ts, hs_time_unit unit, hs_interval v, int64_t *out);

/* Constant date/timestamp +- interval for rewrites before binding (the
 * planner folds such literals so that they prune: sql/plan_rewrite.c).  ts
 * is the text of a date literal (is_date) or a timestamp literal, iv the
 * text of an interval literal with its field qualifier (PostgreSQL's
 * INTERVAL_MASK bits of interval '90' day; 0 for none), sign +1 or -1.
 * Reads both texts as binding does and adds as evaluation does
 * (expr_interval.c), then writes the timestamp's text (PostgreSQL's output,
 * 'YYYY-MM-DD HH:MM:SS[.ffffff]') to out (cap bytes with the NUL).  False
 * when a text is not one binding reads or the result is out of range: the
 * expression is then left to the binder, which reports the error. */
bool ex_ts_interval_text(const char *ts, bool is_date, const char *iv, int mask, int sign,
                         char *out, size_t cap);

/* Human-readable form of the bound tree (for explain); caller frees with hs_free. */
HS_MUST_USE hs_status ex_format(const ex_expr *e, char **out, hs_error *err);

#endif
