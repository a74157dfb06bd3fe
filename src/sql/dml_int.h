/*
 * sql/dml_int.h - what the files of the DML statements share:
 *
 *   dml.c        transactions (BEGIN / COMMIT / ROLLBACK, the row delta a
 *                statement or transaction collects), INSERT, UPDATE and
 *                DELETE, and the entry points (sq_exec_dml, sq_txn_*)
 *   dml_rows.c   the rows statements work on: name scopes, the target's
 *                rows (_file, _pos, _row_id), assignment casts, the source
 *                and its joins with the target, subqueries in expressions,
 *                writing updated and inserted rows, RETURNING
 *   dml_merge.c  MERGE (PostgreSQL 15's WHEN [NOT] MATCHED clauses)
 *   dml_copy.c   COPY FROM / TO Parquet and CSV files
 *
 * dml.c's header comment describes transactions and isolation; dml_rows.c's
 * how the target is read and joined.  Functions shared between the files
 * carry the dml_ prefix; the rest stay static in their file.
 */
#ifndef HS_SQL_DML_INT_H
#define HS_SQL_DML_INT_H

#include "sql/sql_int.h"

#include "base/hashmap.h"
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "columnar/ingest.h"
#include "exec/exec.h"
#include "expr/expr.h"
#include "hyperstream/parquet.h"
#include "hyperstream/table.h"
#include "io/io.h"

#include <roaring/roaring.h>

/* ------------------------------------------------------------------ */
/* types                                                               */

typedef struct dcol {
    const char *qual;    /* borrowed: the relation's alias or name; NULL = none */
    const char *name;    /* borrowed */
    bool hidden;         /* _file/_pos/_row_id: not visible to names */
} dcol;

typedef struct dscope {
    dcol *cols;          /* owned array */
    int n;
    hs_field schema;     /* STRUCT, children ids 1..n (owned) */
} dscope;

typedef struct dctx {
    sq_session *s;
    const char *text;
    json_t *returning;   /* the statement's RETURNING list (borrowed), or NULL */
    hs_batch *ret;       /* the RETURNING rows so far (owned) */
    const char *ret_qual;/* INSERT: the target's name or alias (borrowed) */
} dctx;

/* An hs_error from a lower layer: SQLSTATE derived by the dispatcher. */
#define FAIL(c, code, state, loc, ...) sq_fail((c)->s, err, code, state, (c)->text, loc, __VA_ARGS__)

typedef struct txn {
    hs_table *t;             /* the table written (borrowed from the session); NULL = none yet */
    char *tname;             /* its name in the statement (owned) */
    int64_t read_snap;       /* snapshot read (-1 = empty table) */
    hs_field tschema;        /* the table's columns (owned) */
    hs_map del_idx;          /* data file path -> index */
    hs_buf del_paths;        /* char * (owned) */
    hs_buf del_bms;          /* roaring_bitmap_t * (owned) */
    hs_batch *added;         /* rows added: table columns + _row_id (owned) */
    hs_buf added_dead;       /* uint8_t per added row: 1 = removed again */
} txn;

typedef struct target {
    hs_table *t;
    const char *qual;        /* alias or relation name (borrowed from the JSON) */
    int nt;                  /* table columns */
    hs_batch *rows;          /* nt columns + _file + _pos + _row_id; ids 1..nt+3 */
} target;

/* ------------------------------------------------------------------ */
/* dml.c: batches, the statement context, transactions, INSERT          */
HS_MUST_USE hs_status dml_mk_batch(const hs_field *schema, hs_column **cols, int n, int64_t n_rows,
                                   hs_batch **out, hs_error *err);
HS_MUST_USE hs_status dml_take_cols(const hs_batch *b, int from, int to, const int64_t *idx, int64_t n,
                                    hs_column **cols, hs_error *err);
HS_MUST_USE hs_status dml_batch_append(hs_batch **acc, const hs_batch *b, hs_error *err);
HS_MUST_USE hs_status dml_read_stream(struct ArrowArrayStream *in, hs_batch **out, hs_field *schema_out,
                                      hs_error *err);
void dml_renumber(hs_field *f);
HS_MUST_USE hs_status dml_push_field(hs_field *st, const hs_field *f, const char *name, hs_error *err);
HS_MUST_USE hs_status dml_check_cancel(dctx *c, hs_error *err);
const char *dml_jstr(const json_t *o, const char *k);
HS_MUST_USE hs_status dml_txn_use(dctx *c, txn *x, hs_table *t, const char *name, int loc, hs_error *err);
bool dml_txn_deleted(const txn *x, const char *path, uint32_t pos);
HS_MUST_USE hs_status dml_txn_delete(txn *x, const char *path, int64_t pos, hs_error *err);
HS_MUST_USE hs_status dml_txn_add(txn *x, const hs_batch *b, hs_error *err);
HS_MUST_USE hs_status dml_insert_batch(dctx *c, txn *x, const hs_batch *src, const int *map, int n_map,
                                       hs_error *err);

/* ------------------------------------------------------------------ */
/* dml_rows.c: scopes, the target, assignment, sources and joins       */
void dml_dscope_clear(dscope *s);
HS_MUST_USE hs_status dml_dscope_add(dscope *s, const hs_field *schema, const char *qual, int n_hidden,
                                     hs_error *err);
ex_scope dml_scope_of(dscope *s);
void dml_target_clear(target *g);
const char *dml_rel_qual(const json_t *rv);
HS_MUST_USE hs_status dml_target_load(dctx *c, txn *x, target *g, const char *filter,
                                      const ex_expr *keep_expr, hs_error *err);
HS_MUST_USE hs_status dml_target_delete(txn *x, const target *g, int64_t i, hs_error *err);
HS_MUST_USE hs_status dml_cast_column(dctx *c, const hs_column *col, const hs_field *from,
                                      const hs_field *to, int64_t n, hs_column **out, hs_error *err);
HS_MUST_USE hs_status dml_run_select(dctx *c, json_t *sel, int n_target, hs_batch **out, hs_error *err);
HS_MUST_USE hs_status dml_pair_batch(const dscope *sc, const hs_batch *L, const hs_batch *R,
                                     const int64_t *li, const int64_t *ri, int64_t n, hs_batch **out,
                                     hs_error *err);
bool dml_has_sublink(const json_t *j, int depth);
HS_MUST_USE hs_status dml_eval_with_sublinks(dctx *c, const dscope *sc, const hs_batch *b, json_t *node,
                                             hs_column **out, hs_error *err);
HS_MUST_USE hs_status dml_join_pairs_sub(dctx *c, dscope *sc, const hs_batch *L, const hs_batch *R,
                                         json_t *cond, hs_buf *lo, hs_buf *ro, hs_error *err);
int dml_table_col(const txn *x, const char *name);
HS_MUST_USE hs_status dml_assign_targets(dctx *c, const txn *x, json_t *list, bool with_values,
                                         int *cols, hs_error *err);
HS_MUST_USE hs_status dml_null_column(dctx *c, const hs_field *f, int64_t n, hs_column **out,
                                      hs_error *err);
HS_MUST_USE hs_status dml_add_rows(txn *x, hs_column **cols, hs_column *rid, int64_t n, hs_error *err);
HS_MUST_USE hs_status dml_returning_add(dctx *c, dscope *sc, const hs_batch *b, hs_error *err);
HS_MUST_USE hs_status dml_assign_column(dctx *c, json_t *val, dscope *sc, const hs_batch *b, const hs_field *to,
                                        int64_t n, hs_column **out, hs_error *err);
HS_MUST_USE hs_status dml_write_updates(dctx *c, txn *x, const target *g, dscope *sc, const hs_batch *pb,
                                        const int64_t *trow, int64_t n, json_t *set, hs_error *err);
HS_MUST_USE hs_status dml_inline_body(dctx *c, const json_t *body, json_t **out, hs_error *err);
HS_MUST_USE hs_status dml_open_target(dctx *c, txn *x, json_t *rv, json_t *where, target *g,
                                      hs_error *err);
HS_MUST_USE hs_status dml_open_joined(dctx *c, txn *x, json_t *rv, json_t *items, const char *what,
                                      json_t *cond, target *g, dscope *sc, hs_batch **S, hs_error *err);
HS_MUST_USE hs_status dml_no_returning(dctx *c, json_t *body, hs_error *err);
HS_MUST_USE hs_status dml_where_rows(dctx *c, dscope *sc, const target *g, json_t *where, hs_buf *rows,
                                     hs_error *err);
HS_MUST_USE hs_status dml_first_pairs(const hs_buf *lo, int64_t n_left, hs_buf *keep, hs_error *err);

/* ------------------------------------------------------------------ */
/* the statements of dml_merge.c and dml_copy.c                        */
HS_MUST_USE hs_status dml_exec_merge(dctx *c, txn *x, json_t *body, int64_t *count, hs_error *err);
HS_MUST_USE hs_status dml_exec_copy(dctx *c, txn *x, json_t *body, int64_t *count, hs_error *err);

#endif
