/*
 * exec/op.h - physical operators: the executor's plan is a tree of
 * operators that pull column batches (hs_batch, Arrow layout) from their
 * children.  src/sql/ builds these trees; nothing below exec/ knows them.
 *
 * Contract of every operator (xo_op):
 *   - schema: the output columns, a STRUCT hs_field owned by the operator.
 *     Output columns are addressed BY POSITION: the binder gives the
 *     children of every schema field ids 1..n (column i has field id i+1),
 *     so expressions bound against an operator's schema (expr/expr.h) find
 *     their columns in its batches with pr_batch_find_id.  Names are for
 *     display (EXPLAIN, result column names) and may repeat.  Nested fields
 *     (struct children, list elements) get ids above n, in depth-first
 *     order (xo_schema_renumber), so that a nested id never shadows a
 *     top-level column in pr_batch_find_id's search.
 *   - next(op, &b, err): *b gets the next non-empty batch (caller owns it,
 *     frees with hs_batch_free) or NULL at the end.  After the end or an
 *     error, next must not be called again.  Batches are at most
 *     XO_BATCH_ROWS rows unless a source cannot split them cheaply.
 *   - free(op): frees the operator, its children and everything it holds;
 *     valid at any point (also mid-stream and after errors).
 *   - Cancellation: every operator checks xo_cancelled(ctx) at least once
 *     per batch it produces or consumes and fails with HS_CANCELLED.
 *   - Memory: blocking operators (hash aggregate, sort, hash join build)
 *     account what they hold in ctx->mem_used against ctx->mem_limit and
 *     fail with HS_NOMEM naming the operator when past it; Sort,
 *     HashAggregate, HashJoin, set operations, Distinct and Window spill
 *     to files in ctx->spill_dir first (exec_int.h).
 *   - Statistics for EXPLAIN ANALYZE: rows_out, batches_out and ns (time
 *     spent inside next, children included) are kept by xo_next, which is
 *     what parents call (never op->next directly).
 *
 * Constructors of every operator are declared in exec/exec.h.
 *
 * Ownership: constructors take ownership of their children and of the
 * expressions passed to them (ex_expr, freed with the operator), also on
 * failure.  Threads: one operator tree is driven by one thread at a time;
 * operators may use ctx->pool internally (morsel parallelism).
 */
#ifndef HS_EXEC_OP_H
#define HS_EXEC_OP_H

#include "base/buf.h"
#include "base/keyfilter.h"
#include "base/error.h"
#include "base/threadpool.h"
#include "columnar/column.h"
#include "expr/expr.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define XO_BATCH_ROWS 8192

/* State shared by all operators of one statement. */
typedef struct xo_ctx {
    atomic_int *cancel;        /* non-zero: stop (set by another thread); may be NULL */
    hs_pool *pool;             /* may be NULL = single-threaded */
    int threads;               /* 1 = no parallelism */
    int64_t mem_limit;         /* bytes for blocking operators; <= 0 = unlimited */
    _Atomic int64_t mem_used;
    _Atomic int64_t mem_peak;  /* the most mem_used reached (EXPLAIN ANALYZE) */
    const char *spill_dir;     /* spill files (exec_int.h); NULL = $TMPDIR or /tmp */
} xo_ctx;

typedef struct xo_op xo_op;
struct xo_op {
    const char *name;          /* "HashAggregate", "Sort", ... (static) */
    hs_field schema;           /* output schema (STRUCT, owned) */
    xo_ctx *ctx;               /* borrowed */
    int n_children;
    xo_op **children;          /* owned */
    hs_status (*next)(xo_op *op, hs_batch **out, hs_error *err);
    void (*destroy)(xo_op *op);  /* frees what the operator holds (not children, schema, op) */
    /* EXPLAIN: a one-line detail ("keys: #1, #3", "filter: ...") owned by the
     * operator (hs_malloc), may be NULL; explain_extra adds lines after
     * EXPLAIN ANALYZE ran (pruned files, index used) and may be NULL. */
    char *detail;
    hs_status (*explain_extra)(const xo_op *op, hs_buf *out, hs_error *err);
    /* statistics (kept by xo_next) */
    int64_t rows_out, batches_out, ns;
    /* the most bytes the operator held accounted at once (xo_op_held) */
    int64_t mem_peak;
    /* Runtime join filters (xo_push_keyfilter): takes kf, the set that
     * output column col of every row the consumer still needs is in (a
     * NULL never is); the operator may drop other rows from here on or
     * hand the filter to a child.  Returns whether a scan took it.  NULL:
     * the operator does not take filters. */
    bool (*push_keyfilter)(xo_op *op, int col, hs_keyfilter *kf);
    /* Rows the operator will return when known before it runs (a scan
     * without a filter), else -1; NULL = unknown. */
    int64_t (*exact_rows)(const xo_op *op);
    /* At most how many rows the operator will return, when that is known
     * before it runs (a scan's planned rows), else -1; NULL = unknown. */
    int64_t (*max_rows)(const xo_op *op);
    /* The rows the operator would return, counted without producing them
     * when it can (a filtered scan decided by sidecar indexes: their
     * bitmaps' cardinalities), before it is read; *n = -1 when it cannot.
     * Once counted the operator is done.  NULL = cannot. */
    hs_status (*count_rows)(xo_op *op, int64_t *n, hs_error *err);
};

/* Offers kf (taken) to op (see push_keyfilter); false when nobody took it. */
bool xo_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf);
/* op->exact_rows, or -1. */
int64_t xo_exact_rows(const xo_op *op);
/* op->count_rows (*n = -1 without one). */
HS_MUST_USE hs_status xo_count_rows(xo_op *op, int64_t *n, hs_error *err);
/* op->max_rows, or -1. */
int64_t xo_max_rows(const xo_op *op);

/* Notes that op holds `bytes` accounted now (its peak for EXPLAIN ANALYZE). */
static inline void xo_op_held(xo_op *op, int64_t bytes)
{
    if (bytes > op->mem_peak)
        op->mem_peak = bytes;
}

static inline bool xo_cancelled(const xo_ctx *ctx)
{
    return ctx && ctx->cancel && atomic_load_explicit(ctx->cancel, memory_order_relaxed) != 0;
}

/* Pulls the next batch of op, keeping its statistics. */
HS_MUST_USE hs_status xo_next(xo_op *op, hs_batch **out, hs_error *err);
/* Frees op and its subtree (accepts NULL). */
void xo_free(xo_op *op);
/* The plan as text, one operator per line, indented by depth; with
 * analyze, rows/batches/time and peak memory per operator, and at the end
 * the statement's peak memory (EXPLAIN [ANALYZE]). */
HS_MUST_USE hs_status xo_explain(const xo_op *op, bool analyze, hs_buf *out, hs_error *err);

#endif
