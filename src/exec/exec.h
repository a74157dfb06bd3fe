/*
 * exec/exec.h - constructors of every physical operator (see exec/op.h for
 * the contract they all follow) and the stream adapter.
 *
 * Common rules:
 *   - Constructors take ownership of their children, expressions and
 *     key/aggregate arrays' contents (the arrays themselves are copied), also
 *     when they fail (then everything is freed).  *out is the new operator.
 *   - Column arguments are 0-based positions in the child's output schema.
 *   - Output schemas name their columns for display only; every output
 *     column i has field id i + 1; nested fields get ids above the number of
 *     top-level columns (so pr_batch_find_id never confuses a nested field
 *     with a top-level column).
 *
 * Operator             output columns
 * ------------------   ------------------------------------------------------
 * Values               the given schema
 * Scan                 the scan's columns (hs_scan_options), renumbered
 * VectorSearch         the scan's columns, then the distance (float64)
 * Filter, Limit, Sort, TopK, Distinct
 *                      the child's columns
 * Project              one per expression
 * HashAggregate        the n group columns, then one per aggregate
 * HashJoin/NestedLoop  left then right columns (SEMI/ANTI: left only); the
 *                      side that may be missing becomes nullable
 * SetOp                the left child's columns (right must have the same
 *                      number of columns of the same types)
 * Window               the child's columns, then one per window function
 */
#ifndef HS_EXEC_EXEC_H
#define HS_EXEC_EXEC_H

#include "exec/op.h"
#include "hyperstream/arrow_c_abi.h"
#include "hyperstream/index.h"
#include "hyperstream/table.h"

/* ---- sources ---- */

/* Rows of n batches (taken, also on failure) whose columns have the types of
 * schema (a STRUCT, copied).  Batches of more than XO_BATCH_ROWS rows are
 * split; empty ones are skipped. */
HS_MUST_USE hs_status xo_values(xo_ctx *ctx, const hs_field *schema, int n, hs_batch **batches,
                                xo_op **out, hs_error *err);

/* A table scan: opt (borrowed during the call; may be NULL) chooses the
 * snapshot (time travel), the columns and the filter TEXT, which the table
 * layer uses for partition/bound pruning and sidecar indexes and applies
 * exactly.  The table is borrowed and must outlive the operator.  Planning
 * happens in the constructor (so binding errors surface there). */
HS_MUST_USE hs_status xo_scan(xo_ctx *ctx, hs_table *t, const hs_scan_options *opt, xo_op **out,
                              hs_error *err);

/* Vector top-k through hs_table_search: rows of the scan (columns, filter,
 * snapshot as in xo_scan) nearest to so->query, nearest first, the distance
 * as the last column (float64).  so and its query are copied. */
HS_MUST_USE hs_status xo_vsearch(xo_ctx *ctx, hs_table *t, const hs_scan_options *opt,
                                 const hs_search_options *so, xo_op **out, hs_error *err);

/* ---- row at a time operators ---- */

/* Rows of child for which pred (bound on child's schema) is TRUE. */
HS_MUST_USE hs_status xo_filter(xo_op *child, ex_expr *pred, xo_op **out, hs_error *err);
/* n expressions bound on child's schema; names[i] (copied; NULL = "?column?"). */
HS_MUST_USE hs_status xo_project(xo_op *child, int n, ex_expr **exprs, const char *const *names,
                                 xo_op **out, hs_error *err);
/* Skips offset rows, then passes at most limit rows (limit < 0 = all); stops
 * pulling from the child once the limit is reached. */
HS_MUST_USE hs_status xo_limit(xo_op *child, int64_t limit, int64_t offset, xo_op **out,
                               hs_error *err);

/* Set-returning functions of a ProjectSet (exec/srf.c); arguments are
 * child columns. */
typedef enum {
    XO_SRF_UNNEST, XO_SRF_SERIES_INT, XO_SRF_SERIES_TS, XO_SRF_SERIES_DEC, XO_SRF_VALUES,
    XO_SRF_SPLIT     /* string_to_table(s, delim[, null_string]): arg = text columns (-1 none) */
} xo_srf_kind;
typedef struct xo_srf {
    xo_srf_kind kind;
    int arg[3];          /* UNNEST: the list column; SERIES: start, stop, step (-1 = 1;
                            SERIES_DEC: three decimals of one scale) */
    /* VALUES (unnest(ARRAY[e1, ..., en])): the row's values of columns
     * vals[0..n_vals), all of one type, in order (borrowed during the call) */
    const int *vals;
    int n_vals;
    const char *name;    /* output column name (borrowed during the call; NULL = the function's) */
    hs_time_unit unit;   /* set by xo_projset for SERIES_TS */
} xo_srf;
/* ProjectSet (PostgreSQL 10's): per child row the functions' rows in
 * lockstep, the shorter padded with NULL; no output row where all are
 * empty unless outer (one row of NULLs).  Output: child's columns, one
 * per function, then a bigint ordinality (1-based) when asked. */
HS_MUST_USE hs_status xo_projset(xo_op *child, int n, const xo_srf *srfs, bool ordinality,
                                 bool outer, xo_op **out, hs_error *err);

/* ---- sorting ---- */

typedef struct xo_sort_key {
    int col;           /* position in the child */
    bool desc;
    bool nulls_first;  /* PostgreSQL default: desc (NULLS LAST for ASC, FIRST for DESC) */
} xo_sort_key;

/* Order of values: booleans false < true; numbers by value (NaN above every
 * other float, -0 = 0); decimals by value; strings and binaries as unsigned
 * bytes, then length; dates/times by value; lists and structs element-wise.
 * Ties keep input order (stable). */
HS_MUST_USE hs_status xo_sort(xo_op *child, int n_keys, const xo_sort_key *keys, xo_op **out,
                              hs_error *err);
/* ORDER BY keys LIMIT k in bounded memory (about 2k rows); same order and
 * tie rule as xo_sort followed by a limit of k. */
HS_MUST_USE hs_status xo_topk(xo_op *child, int n_keys, const xo_sort_key *keys, int64_t k,
                              xo_op **out, hs_error *err);

/* ---- aggregation ---- */

typedef enum xo_agg_fn {
    XO_AGG_COUNT_STAR = 0, XO_AGG_COUNT, XO_AGG_SUM, XO_AGG_AVG, XO_AGG_MIN, XO_AGG_MAX,
    XO_AGG_BOOL_AND, XO_AGG_BOOL_OR, XO_AGG_STRING_AGG, XO_AGG_ARRAY_AGG
} xo_agg_fn;

typedef struct xo_agg {
    xo_agg_fn fn;
    int arg;           /* child column (ignored for count(*)) */
    bool distinct;     /* aggregate over the distinct non-null values */
    /* string_agg: the separator, from column sep_col when >= 0, else the
     * constant sep (NULL = no separator); copied. */
    int sep_col;
    const char *sep;
    const char *name;  /* output column name (copied; NULL = the function's name) */
    /* string_agg/array_agg(... ORDER BY ...): keys over child columns
     * (copied, at most 16); the group's values are ordered by them
     * (stable: ties keep input order).  n_order 0 = input order. */
    int n_order;
    const xo_sort_key *order;
} xo_agg;

/* Result types (PostgreSQL's, with DuckDB's values where they differ):
 *   count(*), count(x)              int64, 0 on no rows
 *   sum(int8/16/32, uint8/16/32)    int64 (error "bigint out of range" on overflow)
 *   sum(int64, uint64)              decimal128(38,0) (PostgreSQL numeric; DuckDB int128)
 *   sum(decimal(p,s))               decimal128(38,s)
 *   sum(float32/64)                 float64
 *   avg(any number)                 float64 (DuckDB; PostgreSQL gives numeric for
 *                                   integers and decimals)
 *   min/max(x)                      x's type (any sortable type, order of xo_sort)
 *   bool_and/bool_or(bool)          bool
 *   string_agg(text, sep)           string, in input order
 *   array_agg(x)                    list<x>, in input order, NULLs kept
 * All but count return NULL for a group without non-null input (array_agg
 * of no rows is NULL, of NULLs a list of NULLs).  NULL is a group of its
 * own; with n_groups == 0 there is exactly one output row, even on empty
 * input. */
HS_MUST_USE hs_status xo_hashagg(xo_op *child, int n_groups, int n_aggs, const xo_agg *aggs,
                                 xo_op **out, hs_error *err);
/* Distinct rows of child (NULLs equal), in order of first appearance. */
HS_MUST_USE hs_status xo_distinct(xo_op *child, xo_op **out, hs_error *err);

/* ---- joins ---- */

typedef enum xo_join_kind {
    XO_JOIN_INNER = 0, XO_JOIN_LEFT, XO_JOIN_RIGHT, XO_JOIN_FULL, XO_JOIN_SEMI, XO_JOIN_ANTI,
    /* x NOT IN (right): one key; a left row passes when right is empty, or
     * when its key is not null, matches no right key and right has no null
     * key.  No residual. */
    XO_JOIN_ANTI_NULL_AWARE
} xo_join_kind;

/* Equi-join: left key columns lkeys[i] equal right key columns rkeys[i]
 * (integers of any width compare by value; other key types must match
 * exactly); NULL keys never match.  residual (may be NULL) is bound on the
 * concatenated left||right schema (left columns, then right ones) and is
 * part of the join condition (outer joins keep rows it rejects as
 * unmatched).  The right child is built into a hash table; the left is
 * streamed.  n_keys == 0 is a nested-loop join. */
HS_MUST_USE hs_status xo_hashjoin(xo_op *left, xo_op *right, xo_join_kind kind, int n_keys,
                                  const int *lkeys, const int *rkeys, ex_expr *residual,
                                  xo_op **out, hs_error *err);
/* The schema a join residual is bound against: left's columns then right's,
 * renumbered (ids 1..n, nested above).  Caller clears *out.  A bound
 * expression borrows the schema it was bound to: bind a residual either
 * against a schema that outlives the join, or, simpler, against the join's
 * own copy (xo_join_input_schema, borrowed until the join is freed) and
 * hand it over with xo_join_set_residual before the first xo_next. */
HS_MUST_USE hs_status xo_schema_concat(const hs_field *left, const hs_field *right, hs_field *out,
                                       hs_error *err);
const hs_field *xo_join_input_schema(const xo_op *join);
/* Sets (replaces) the residual of a HashJoin/NestedLoopJoin; takes it,
 * also on failure. */
HS_MUST_USE hs_status xo_join_set_residual(xo_op *join, ex_expr *residual, hs_error *err);
/* Non-equi / cross join: cond (NULL = cross join) on left||right. */
HS_MUST_USE hs_status xo_nljoin(xo_op *left, xo_op *right, xo_join_kind kind, ex_expr *cond,
                                xo_op **out, hs_error *err);

/* Index nested-loop join of a small left side with a table: the left child
 * is read first, its distinct keys (column lkey; integers or strings) go
 * into the scan's filter as `key_column IN (...)`, so the table's pruning
 * and sidecar indexes select the rows, which are then hash-joined.  opt as
 * in xo_scan (copied; its columns must include key_column).  Kinds INNER,
 * LEFT, SEMI, ANTI; output as xo_hashjoin's.  The table is borrowed. */
HS_MUST_USE hs_status xo_index_join(xo_op *left, int lkey, hs_table *t, const hs_scan_options *opt,
                                    const char *key_column, xo_join_kind kind, xo_op **out,
                                    hs_error *err);

/* ---- set operations ---- */

typedef enum xo_setop_kind { XO_SET_UNION = 0, XO_SET_INTERSECT, XO_SET_EXCEPT } xo_setop_kind;
/* PostgreSQL semantics: rows compare with NULLs equal; without ALL the
 * result is distinct; INTERSECT ALL keeps min(m, n) copies of a row, EXCEPT
 * ALL max(m - n, 0). */
HS_MUST_USE hs_status xo_setop(xo_setop_kind kind, bool all, xo_op *left, xo_op *right,
                               xo_op **out, hs_error *err);
/* UNION ALL that reads `right` only when `left` gave fewer than n rows (and
 * never opens it otherwise): the NULL-vector rows that follow a vector
 * search's k nearest only matter when the search found fewer than k. */
HS_MUST_USE hs_status xo_union_fill(xo_op *left, xo_op *right, int64_t n, xo_op **out,
                                    hs_error *err);

/* ---- window functions ---- */

typedef enum xo_win_fn {
    XO_WIN_ROW_NUMBER = 0, XO_WIN_RANK, XO_WIN_DENSE_RANK,
    XO_WIN_COUNT_STAR, XO_WIN_COUNT, XO_WIN_SUM, XO_WIN_AVG, XO_WIN_MIN, XO_WIN_MAX,
    XO_WIN_LAG, XO_WIN_LEAD, XO_WIN_FIRST_VALUE, XO_WIN_LAST_VALUE,
    XO_WIN_NTILE,         /* offset = the number of buckets (> 0) */
    XO_WIN_PERCENT_RANK,  /* (rank - 1) / (partition rows - 1), 0 for one row; float64 */
    XO_WIN_CUME_DIST,     /* rows up to the current row's last peer / partition rows; float64 */
    XO_WIN_NTH_VALUE      /* offset = n (> 0): the frame's nth row, NULL past its end */
} xo_win_fn;

/* The frame of the aggregates and first/last_value (PostgreSQL's):
 *   DEFAULT  with ORDER BY: RANGE UNBOUNDED PRECEDING .. CURRENT ROW (the
 *            current row's peers included); without: the whole partition
 *   ROWS     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
 *   WHOLE    ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING */
typedef enum xo_frame {
    XO_FRAME_DEFAULT = 0, XO_FRAME_ROWS, XO_FRAME_WHOLE,
    /* ROWS BETWEEN lo AND hi: row offsets from the current row (2 PRECEDING
     * = -2, CURRENT ROW = 0, 1 FOLLOWING = 1; INT64_MIN = UNBOUNDED
     * PRECEDING, INT64_MAX = UNBOUNDED FOLLOWING); clipped to the partition,
     * possibly empty (count 0, the others NULL) */
    XO_FRAME_ROWS_BETWEEN,
    /* GROUPS BETWEEN lo AND hi: peer-group offsets from the current row's
     * group, encoded as ROWS_BETWEEN's (0 = the current row's group) */
    XO_FRAME_GROUPS,
    /* RANGE BETWEEN lo AND hi: lo/hi INT64_MIN = UNBOUNDED PRECEDING,
     * INT64_MAX = UNBOUNDED FOLLOWING, 0 = CURRENT ROW (its peers), 1 = an
     * offset bound: the frame starts at the first row whose range_key is not
     * before column range_lo of the current row in the ORDER BY direction
     * (ends at the last row not after range_hi); the planner computes those
     * columns (key -/+ offset, in a type that cannot overflow) and range_key
     * (the single ORDER BY key in that type).  A current row with a NULL
     * key frames its NULL peers; NULL keys are never in a non-NULL row's
     * offset bound (PostgreSQL's nodeWindowAgg.c) */
    XO_FRAME_RANGE
} xo_frame;

/* EXCLUDE of a frame: nothing, the current row, its peer group, its peers
 * but not itself */
typedef enum xo_exclude {
    XO_EXCL_NONE = 0, XO_EXCL_CURRENT, XO_EXCL_GROUP, XO_EXCL_TIES
} xo_exclude;

typedef struct xo_win {
    xo_win_fn fn;
    int arg;           /* child column (aggregates, lag/lead, first/last_value) */
    int64_t offset;    /* lag/lead: rows back/ahead (0 = the default 1) */
    xo_frame frame;
    const char *name;  /* output column name (copied; NULL = the function's) */
    int64_t lo, hi;    /* XO_FRAME_ROWS_BETWEEN, _GROUPS, _RANGE */
    int range_key, range_lo, range_hi;   /* XO_FRAME_RANGE columns (see there) */
    /* the offsets themselves (-1: none), checked when the partition is
     * computed: NULL is 22004, negative or NaN 22013 (as PostgreSQL does
     * at execution, so an empty input raises nothing) */
    int range_off_lo, range_off_hi;
    bool range_desc;   /* the ORDER BY key is DESC */
    xo_exclude exclude;
    /* lag/lead: with has_default, rows whose offset row lies outside the
     * partition take column def_col (of arg's type) of the current row */
    bool has_default;
    int def_col;
} xo_win;

/* Window functions sharing one window: PARTITION BY the child columns
 * part[0..n_part) (NULLs are one partition), ORDER BY keys.  Output: the
 * child's columns then one per function, rows ordered by partition then
 * keys (stable).  Result types: row_number/rank/dense_rank/count/ntile
 * int64; percent_rank/cume_dist float64; sum/avg as xo_hashagg's;
 * min/max/lag/lead/first_value/last_value/nth_value the argument's type
 * (NULL outside the partition for lag/lead without a default). */
HS_MUST_USE hs_status xo_window(xo_op *child, int n_part, const int *part, int n_keys,
                                const xo_sort_key *keys, int n_fns, const xo_win *fns, xo_op **out,
                                hs_error *err);

/* ---- output ---- */

/* Moves the operator tree into an ArrowArrayStream (caller releases it): the
 * stream's schema is op's, every get_next pulls one batch.  on_close(owner)
 * runs after the tree is freed (to free the xo_ctx and what the statement
 * holds; may be NULL).  On failure op is freed and on_close has run. */
HS_MUST_USE hs_status xo_to_stream(xo_op *op, void (*on_close)(void *owner), void *owner,
                                   struct ArrowArrayStream *out, hs_error *err);

#endif
