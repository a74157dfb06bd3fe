/*
 * exec/exec_int.h - internals shared by the operator files of exec/:
 * op.c (the operator frame, EXPLAIN, batches, memory accounting, row sets,
 * the output queue), value.c (row keys and value order), sort.c (also the
 * sorted permutation Window uses), basic.c, scan.c, agg.c, join.c,
 * indexjoin.c, setop.c, window.c.
 *
 * Row keys.  Hashing operators (aggregate groups, join keys, distinct, set
 * operations) turn the key columns of a row into a byte string and look it
 * up in an hs_map: two rows have equal keys exactly when their strings are
 * equal.  Encoding per column: one tag byte (0 = NULL, 1 = value) then
 *   BOOL                1 byte
 *   signed/unsigned ints, DATE32, TIME32/64, TIMESTAMP
 *                       8 bytes int64 (so int32 = int64 keys match; uint64
 *                       above INT64_MAX gets tag 2 and its own bits)
 *   FLOAT16/32/64       8 bytes of the double (-0 -> 0, every NaN -> one NaN)
 *   DECIMAL128          16 bytes (same scale assumed)
 *   STRING/BINARY/FIXED_BINARY
 *                       uint32 length + bytes
 *   LIST/FIXED_LIST/MAP uint32 count + each element encoded
 *   STRUCT              each child encoded
 *   NA                  tag 0 only
 */
#ifndef HS_EXEC_EXEC_INT_H
#define HS_EXEC_EXEC_INT_H

#include "base/buf.h"
#include "base/interval.h"
#include "base/mem.h"
#include "exec/exec.h"

#include <time.h>

/* Allocates an operator of `size` bytes (>= sizeof(xo_op), zeroed) that owns
 * the n children (freed here on failure).  schema is left empty. */
HS_MUST_USE hs_status xo_op_alloc(size_t size, xo_ctx *ctx, const char *name, int n,
                                  xo_op **children, xo_op **out, hs_error *err);
/* Gives schema's top-level children field ids 1..n and nested ones ids
 * above n. */
void xo_schema_renumber(hs_field *schema);
/* Builds a batch with a copy of schema and the columns (taken, also on failure). */
HS_MUST_USE hs_status xo_batch_wrap(const hs_field *schema, int n_cols, hs_column **cols,
                                    int64_t n_rows, hs_batch **out, hs_error *err);
/* A batch of rows idx[0..n) of b (idx -1 = a null row), with schema. */
/* A new batch of rows [at, at + n) of b (memory-limited consumers cut big
 * input batches into pieces). */
HS_MUST_USE hs_status xo_batch_rows(const hs_batch *b, int64_t at, int64_t n, hs_batch **out,
                                    hs_error *err);
HS_MUST_USE hs_status xo_batch_take(const hs_field *schema, const hs_batch *b, const int64_t *idx,
                                    int64_t n, hs_batch **out, hs_error *err);
/* Replaces b's schema by a copy of schema (same column types). */
HS_MUST_USE hs_status xo_batch_set_schema(hs_batch *b, const hs_field *schema, hs_error *err);
/* Bytes held by a column (capacity of its buffers, children included). */
int64_t xo_col_bytes(const hs_column *c);
int64_t xo_batch_bytes(const hs_batch *b);
/* Accounts bytes against ctx->mem_limit; HS_NOMEM naming op when past it
 * (nothing is accounted then). */
HS_MUST_USE hs_status xo_mem_reserve(xo_ctx *ctx, int64_t bytes, const char *op, hs_error *err);
/* Accounts bytes that are held already (batches read ahead), even past
 * the limit: the operator then holds back from reading more. */
void xo_mem_force(xo_ctx *ctx, int64_t bytes);
void xo_mem_release(xo_ctx *ctx, int64_t bytes);
/* Bytes ctx has in use now. */
static inline int64_t xo_mem_used(const xo_ctx *ctx)
{
    return ctx ? atomic_load(&((xo_ctx *)ctx)->mem_used) : 0;
}
HS_MUST_USE hs_status xo_check_cancel(const xo_ctx *ctx, hs_error *err);
int64_t xo_now_ns(void);

/* Values: integers of any width (and dates/times) as int64 (*big: a uint64
 * above INT64_MAX, returned as its bits); floats of any width as double. */
bool xo_is_int_type(hs_type t);
int64_t xo_int_at(const hs_column *c, int64_t i, bool *big);
double xo_float_at(const hs_column *c, int64_t i);
hs_interval xo_interval_at(const hs_column *c, int64_t i);   /* row i of an INTERVAL column */

/* Marks a Distinct (xo_distinct) as read to its end under an aggregate:
 * rounds of small batches grow, and an integer last column packs its keys
 * (exec/distinct.c).  Call before its first xo_next. */
void xo_distinct_set_bulk(xo_op *op);

/* Row keys (see top). */
HS_MUST_USE hs_status xo_key_append(hs_buf *out, const hs_column *c, int64_t row);
/* Order of two non-null values of columns of the same type (see xo_sort). */
int xo_val_cmp(const hs_column *a, int64_t i, const hs_column *b, int64_t j);
/* Full key comparison (nulls placed per key) between row i of batch a and
 * row j of batch b, which have the same column types. */
int xo_keys_cmp(const xo_sort_key *keys, int n_keys, hs_column *const *a, int64_t i,
                hs_column *const *b, int64_t j);

/* A growing set of rows with fixed column types (materialised input). */
typedef struct xo_rows {
    hs_batch *b;       /* NULL until created; columns grow */
    int64_t bytes;     /* accounted in ctx */
} xo_rows;
HS_MUST_USE hs_status xo_rows_append(xo_rows *r, xo_ctx *ctx, const char *op, const hs_batch *src,
                                     hs_error *err);
/* The same, for only the rows idx[0..n) of src. */
HS_MUST_USE hs_status xo_rows_append_take(xo_rows *r, xo_ctx *ctx, const char *op,
                                          const hs_batch *src, const int64_t *idx, int64_t n,
                                          hs_error *err);
HS_MUST_USE hs_status xo_rows_init(xo_rows *r, const hs_field *schema, hs_error *err);
void xo_rows_free(xo_rows *r, xo_ctx *ctx);
static inline int64_t xo_rows_count(const xo_rows *r) { return r->b ? r->b->n_rows : 0; }

/* perm[0..n) = the rows 0..n-1 of cols in the order of keys (stable);
 * parallel on ctx->pool (ctx may be NULL). */
HS_MUST_USE hs_status xo_sort_perm(const xo_ctx *ctx, hs_column *const *cols, int n_keys,
                                   const xo_sort_key *keys, int64_t n, int64_t *perm,
                                   hs_error *err);

/* Spill files (spill.c): blocks of serialised batches in an unlinked
 * temporary file of ctx->spill_dir (NULL: $TMPDIR or /tmp), created on the
 * first write and gone when closed.  A zeroed xo_spill is empty. */
typedef struct xo_spill {
    int fd;
    bool open;
    int64_t size;       /* bytes in the file */
    int64_t written;    /* bytes written over its life (statistics) */
} xo_spill;
/* Appends b as one block; *off = where it starts. */
HS_MUST_USE hs_status xo_spill_write(const xo_ctx *ctx, xo_spill *sp, const hs_batch *b,
                                     int64_t *off, hs_error *err);
/* Reads the block at off (written with this schema); *next = the offset
 * just after it (may be NULL). */
HS_MUST_USE hs_status xo_spill_read(const xo_spill *sp, const hs_field *schema, int64_t off,
                                    hs_batch **out, int64_t *next, hs_error *err);
void xo_spill_close(xo_spill *sp);
/* Partitioned spilling (spill.c): one file, per partition the offsets of
 * its blocks (int64) and its row count.  A zeroed one is empty. */
#define XO_SPILL_PARTS 16
/* Recursion levels of partitioned spilling (16^4 = 65536-way split); past
 * them an operator fails with HS_NOMEM (SQLSTATE 53200). */
#define XO_SPILL_MAX_LEVEL 4
typedef struct xo_spill_parts {
    xo_spill sp;
    hs_buf offs[XO_SPILL_PARTS];
    int64_t rows[XO_SPILL_PARTS];
    int64_t total;      /* rows written over its life */
} xo_spill_parts;
/* The hash seed of recursion level `level`. */
uint64_t xo_spill_seed(int level);
/* Writes each row i of b to partition part[i] (>= XO_SPILL_PARTS: not
 * written), one block per partition, rows in input order. */
HS_MUST_USE hs_status xo_spill_parts_write(const xo_ctx *ctx, xo_spill_parts *p,
                                           const hs_batch *b, const uint8_t *part,
                                           hs_error *err);
void xo_spill_parts_free(xo_spill_parts *p);
/* A source operator "SpillRead" giving the blocks offs (int64 offsets,
 * taken: offs is left empty) of sp (borrowed: it outlives the reader),
 * written with schema; small blocks come out joined. */
HS_MUST_USE hs_status xo_spill_reader(xo_ctx *ctx, const xo_spill *sp, const hs_field *schema,
                                      hs_buf *offs, xo_op **out, hs_error *err);
/* Test hook: the k-th spill file creation, write or read from now fails
 * with HS_IO (k <= 0: off). */
void xo_spill_fail_after(int64_t k);

/* An output queue of batches (operators that produce several per input). */
typedef struct xo_queue {
    hs_batch **a;
    int n, head, cap;
} xo_queue;
HS_MUST_USE hs_status xo_queue_push(xo_queue *q, hs_batch *b, hs_error *err); /* takes b */
hs_batch *xo_queue_pop(xo_queue *q);   /* NULL when empty */
void xo_queue_free(xo_queue *q);

#endif
