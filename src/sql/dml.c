/*
 * sql/dml.c - transactions (BEGIN / COMMIT / ROLLBACK), INSERT, UPDATE and
 * DELETE, and the entry points of the data-changing statements
 * (sq_exec_dml; MERGE is dml_merge.c, COPY dml_copy.c, the rows they read
 * and join dml_rows.c: dml_int.h lists the files).
 *
 * Every data change goes through a row delta (hyperstream/table.h
 * hs_row_delta_*): the rows a statement removes are named by data file and
 * position (the scan's _file/_pos columns), the rows it writes are added,
 * and ONE snapshot publishes both (position delete files on v2 tables,
 * deletion vectors on v3; updated rows keep their _row_id on v3).
 *
 * Changes collect in a transaction (txn below): the statement's own, or
 * the session's open one between BEGIN and COMMIT.
 *
 *   state              reads                            writes
 *   -----------------  -------------------------------  ------------------------------
 *   no BEGIN           the table's current snapshot      one commit at the end of the
 *                                                        statement
 *   BEGIN ... COMMIT   the snapshot current at the       buffered; one commit at COMMIT
 *                      first write of the transaction,   (HS_CONFLICT -> SQLSTATE 40001
 *                      plus the transaction's own        and the transaction is rolled
 *                      changes (DML statements)          back); ROLLBACK drops them
 *
 * Isolation: snapshot isolation.  A statement or transaction reads one
 * snapshot; at commit, the row delta is validated against what others
 * committed since (table layer, rowdelta.c): concurrent appends and changes
 * to other data files rebase, a concurrent change to a data file this
 * transaction deletes rows from fails it with 40001 (serialization_failure).
 * A transaction writes one table (a second one is 0A000).  SELECT statements
 * inside a transaction read the committed table (they do not see the
 * transaction's uncommitted changes); DML statements do see them.  After an
 * error inside a transaction, statements fail with 25P02 until ROLLBACK (or
 * COMMIT, which then rolls back), as in PostgreSQL.
 *
 * RETURNING (INSERT, UPDATE, DELETE) returns rows with the tag.  Command
 * tags follow PostgreSQL: INSERT 0 n, UPDATE n, DELETE n, MERGE n, COPY n,
 * BEGIN, COMMIT, ROLLBACK.
 */
#include "sql/dml_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* batches                                                             */

/* A batch of schema (copied) over columns cols[0..n) (taken, also on
 * failure). */
hs_status dml_mk_batch(const hs_field *schema, hs_column **cols, int n, int64_t n_rows,
                       hs_batch **out, hs_error *err)
{
    *out = NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(schema, 0, &b, err);
    if (st != HS_OK || b->n_cols != n) {
        if (st == HS_OK)
            st = hs_err_set(err, HS_INTERNAL, "mk_batch: %d columns for %d fields", n, b->n_cols);
        hs_batch_free(b);
        for (int i = 0; i < n; i++)
            hs_col_free(cols[i]);
        return st;
    }
    for (int i = 0; i < n; i++) {
        hs_col_free(b->cols[i]);
        b->cols[i] = cols[i];
    }
    b->n_rows = n_rows;
    *out = b;
    return HS_OK;
}

/* Rows idx[0..n) of columns [from, to) of b (idx[i] == -1: a null row). */
hs_status dml_take_cols(const hs_batch *b, int from, int to, const int64_t *idx, int64_t n,
                        hs_column **cols, hs_error *err)
{
    for (int c = from; c < to; c++) {
        hs_status st = hs_col_take_nullable(b->cols[c], idx, n, &cols[c - from], err);
        if (st != HS_OK) {
            for (int k = from; k < c; k++) {
                hs_col_free(cols[k - from]);
                cols[k - from] = NULL;
            }
            return st;
        }
    }
    return HS_OK;
}

/* Appends b's rows to *acc (created on first use with b's schema). */
hs_status dml_batch_append(hs_batch **acc, const hs_batch *b, hs_error *err)
{
    if (!*acc)
        HS_TRY(hs_batch_create(&b->schema, 0, acc, err));
    for (int i = 0; i < b->n_cols; i++)
        HS_TRY(hs_col_append_column((*acc)->cols[i], b->cols[i], err));
    (*acc)->n_rows += b->n_rows;
    return HS_OK;
}

/* Reads a stream (moved) into one batch (*out NULL when it had no rows;
 * schema_out, when given, gets the stream's schema). */
hs_status dml_read_stream(struct ArrowArrayStream *in, hs_batch **out, hs_field *schema_out,
                          hs_error *err)
{
    *out = NULL;
    hs_batch_source src = {0};
    HS_TRY(hs_arrow_import_stream(in, &src, err));
    hs_status st = HS_OK;
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        st = dml_batch_append(out, b, err);
        hs_batch_free(b);
    }
    if (st == HS_OK && schema_out && hs_field_copy(&src.schema, schema_out) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK && !*out && schema_out)
        st = hs_batch_create(schema_out, 0, out, err);
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    if (st != HS_OK) {
        hs_batch_free(*out);
        *out = NULL;
    }
    return st;
}

/* Gives the top-level children of f the positional ids 1..n. */
void dml_renumber(hs_field *f)
{
    for (int i = 0; i < f->n_children; i++)
        f->children[i].field_id = i + 1;
}

hs_status dml_push_field(hs_field *st, const hs_field *f, const char *name, hs_error *err)
{
    hs_field c = {0};
    if (hs_field_copy(f, &c) != HS_OK)
        return hs_err_nomem(err, 64);
    if (name) {
        char *nm = hs_malloc(strlen(name) + 1);
        if (!nm) {
            hs_field_clear(&c);
            return hs_err_nomem(err, 64);
        }
        strcpy(nm, name);
        hs_free(c.name);
        c.name = nm;
    }
    if (hs_field_add_child(st, &c) != HS_OK) {
        hs_field_clear(&c);
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* the statement context                                               */

/* hs_session_cancel was called: the statement stops with 57014 (nothing
 * committed).  Checked per batch read and per chunk of join pairs. */
hs_status dml_check_cancel(dctx *c, hs_error *err)
{
    if (atomic_load(&c->s->cancel))
        return FAIL(c, HS_CANCELLED, "57014", -1, "canceling statement due to user request");
    return HS_OK;
}

const char *dml_jstr(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ------------------------------------------------------------------ */
/* transactions                                                        */

typedef struct dml_state {
    bool open;               /* BEGIN seen */
    bool aborted;            /* an error in the open transaction */
    txn tx;
} dml_state;

static void txn_clear(txn *x)
{
    for (size_t i = 0; i < HS_VEC_LEN(&x->del_paths, char *); i++) {
        hs_free(HS_VEC_AT(&x->del_paths, char *, i));
        roaring_bitmap_free(HS_VEC_AT(&x->del_bms, roaring_bitmap_t *, i));
    }
    hs_buf_free(&x->del_paths);
    hs_buf_free(&x->del_bms);
    hs_map_free(&x->del_idx);
    hs_batch_free(x->added);
    hs_buf_free(&x->added_dead);
    hs_field_clear(&x->tschema);
    hs_free(x->tname);
    memset(x, 0, sizeof *x);
}

/* Binds the transaction to table t (first write) or checks it is t. */
hs_status dml_txn_use(dctx *c, txn *x, hs_table *t, const char *name, int loc, hs_error *err)
{
    if (x->t == t)
        return HS_OK;
    if (x->t)
        return FAIL(c, HS_UNSUPPORTED, "0A000", loc, "a transaction may write only one table "
                    "(it writes \"%s\"; this statement writes \"%s\")", x->tname, name);
    HS_TRY(hs_table_refresh(t, err));
    struct ArrowSchema as;
    HS_TRY(hs_table_schema(t, &as, err));
    hs_status st = hs_arrow_import_schema(&as, &x->tschema, err);
    as.release(&as);
    HS_TRY(st);
    x->t = t;
    x->read_snap = hs_table_current_snapshot_id(t);
    x->tname = hs_malloc(strlen(name) + 1);
    if (!x->tname)
        return hs_err_nomem(err, 64);
    strcpy(x->tname, name);
    hs_field rs;
    hs_field_init(&rs, "", HS_TYPE_STRUCT, false);
    st = HS_OK;
    for (int i = 0; i < x->tschema.n_children && st == HS_OK; i++)
        st = dml_push_field(&rs, &x->tschema.children[i], NULL, err);
    hs_field rid;
    hs_field_init(&rid, "_row_id", HS_TYPE_INT64, true);
    if (st == HS_OK && hs_field_add_child(&rs, &rid) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = hs_batch_create(&rs, 0, &x->added, err);
    hs_field_clear(&rs);
    return st;
}

bool dml_txn_deleted(const txn *x, const char *path, uint32_t pos)
{
    uint64_t i;
    if (!hs_map_get(&x->del_idx, path, strlen(path), &i))
        return false;
    return roaring_bitmap_contains(HS_VEC_AT(&x->del_bms, roaring_bitmap_t *, i), pos);
}

/* Marks (path, pos) deleted; path NULL = added row pos. */
hs_status dml_txn_delete(txn *x, const char *path, int64_t pos, hs_error *err)
{
    if (!path) {
        if (pos < 0 || (size_t)pos >= x->added_dead.len)
            return hs_err_set(err, HS_INTERNAL, "delete of added row %lld out of range",
                              (long long)pos);
        x->added_dead.data[pos] = 1;
        return HS_OK;
    }
    size_t len = strlen(path);
    uint64_t i;
    if (!hs_map_get(&x->del_idx, path, len, &i)) {
        char *p = hs_malloc(len + 1);
        roaring_bitmap_t *bm = roaring_bitmap_create();
        i = HS_VEC_LEN(&x->del_paths, char *);
        if (!p || !bm || HS_VEC_PUSH(&x->del_paths, char *, p) != HS_OK) {
            hs_free(p);
            if (bm)
                roaring_bitmap_free(bm);
            return hs_err_nomem(err, len);
        }
        memcpy(p, path, len + 1);
        if (HS_VEC_PUSH(&x->del_bms, roaring_bitmap_t *, bm) != HS_OK) {
            roaring_bitmap_free(bm);
            x->del_paths.len -= sizeof(char *);
            hs_free(p);
            return hs_err_nomem(err, len);
        }
        if (hs_map_put(&x->del_idx, p, len, i) != HS_OK)
            return hs_err_nomem(err, len);
    }
    roaring_bitmap_add(HS_VEC_AT(&x->del_bms, roaring_bitmap_t *, i), (uint32_t)pos);
    return HS_OK;
}

/* Adds rows: b has the table's columns (in order, table types) and a
 * trailing int64 _row_id column. */
hs_status dml_txn_add(txn *x, const hs_batch *b, hs_error *err)
{
    for (int i = 0; i < b->n_cols; i++)
        HS_TRY(hs_col_append_column(x->added->cols[i], b->cols[i], err));
    x->added->n_rows += b->n_rows;
    for (int64_t i = 0; i < b->n_rows; i++)
        if (hs_buf_append(&x->added_dead, "", 1) != HS_OK)
            return hs_err_nomem(err, 1);
    return HS_OK;
}

/* Commits the transaction's changes as one row delta; the txn is cleared
 * whatever the result.  HS_CONFLICT -> 40001. */
static hs_status txn_commit(dctx *c, txn *x, hs_error *err)
{
    if (!x->t) {
        txn_clear(x);
        return HS_OK;
    }
    hs_row_delta *d = NULL;
    hs_status st = hs_row_delta_open(x->t, x->read_snap, &d, err);
    int64_t *pos = NULL;
    for (size_t i = 0; st == HS_OK && i < HS_VEC_LEN(&x->del_paths, char *); i++) {
        roaring_bitmap_t *bm = HS_VEC_AT(&x->del_bms, roaring_bitmap_t *, i);
        uint64_t n = roaring_bitmap_get_cardinality(bm);
        if (!n)
            continue;
        uint32_t *p32 = hs_malloc(n * 4);
        int64_t *p64 = hs_realloc(pos, n * 8);
        if (!p32 || !p64) {
            hs_free(p32);
            pos = p64 ? p64 : pos;
            st = hs_err_nomem(err, n * 8);
            break;
        }
        pos = p64;
        roaring_bitmap_to_uint32_array(bm, p32);
        for (uint64_t k = 0; k < n; k++)
            pos[k] = p32[k];
        hs_free(p32);
        st = hs_row_delta_delete(d, HS_VEC_AT(&x->del_paths, char *, i), pos, (int64_t)n, err);
    }
    hs_free(pos);
    /* the added rows still alive */
    int64_t n_live = 0;
    for (size_t i = 0; i < x->added_dead.len; i++)
        n_live += !x->added_dead.data[i];
    if (st == HS_OK && n_live > 0) {
        int64_t *idx = hs_malloc((size_t)n_live * 8);
        hs_column **cols = hs_calloc((size_t)x->added->n_cols + 1, sizeof *cols);
        hs_batch *b = NULL;
        if (!idx || !cols)
            st = hs_err_nomem(err, (size_t)n_live * 8);
        int64_t k = 0;
        for (size_t i = 0; st == HS_OK && i < x->added_dead.len; i++)
            if (!x->added_dead.data[i])
                idx[k++] = (int64_t)i;
        if (st == HS_OK)
            st = dml_take_cols(x->added, 0, x->added->n_cols, idx, n_live, cols, err);
        if (st == HS_OK)
            st = dml_mk_batch(&x->added->schema, cols, x->added->n_cols, n_live, &b, err);
        hs_free(cols);
        hs_free(idx);
        struct ArrowArrayStream s;
        if (st == HS_OK) {
            st = hs_arrow_export_one_batch(b, &s, err);
            b = NULL;
        }
        if (st == HS_OK)
            st = hs_row_delta_add(d, &s, err);
        hs_batch_free(b);
    }
    if (st == HS_OK)
        st = hs_row_delta_commit(d, err);
    hs_row_delta_free(d);
    txn_clear(x);
    if (st == HS_CONFLICT)
        return FAIL(c, HS_CONFLICT, "40001", -1, "could not serialize access due to concurrent "
                    "update: %s", err->msg);
    return st;
}

static hs_status exec_delete(dctx *c, txn *x, json_t *body, int64_t *count, hs_error *err)
{
    HS_TRY(dml_no_returning(c, body, err));
    target g;
    json_t *using = json_object_get(body, "usingClause");
    json_t *where = json_object_get(body, "whereClause");
    json_t *rv = json_object_get(body, "relation");
    dscope sc = {0};
    hs_buf rows = {0};
    hs_batch *S = NULL;
    hs_status st;
    if (json_array_size(using)) {
        st = dml_open_joined(c, x, rv, using, "DELETE ... USING", where, &g, &sc, &S, err);
    } else {
        st = dml_open_target(c, x, rv, where, &g, err);
        if (st == HS_OK)
            st = dml_dscope_add(&sc, &g.rows->schema, g.qual, 3, err);
    }
    hs_buf srows = {0};   /* USING: the source row of each deleted row */
    if (st == HS_OK && json_array_size(using)) {
        hs_buf lo = {0}, ro = {0}, keep = {0};
        if (st == HS_OK)
            st = dml_join_pairs_sub(c, &sc, g.rows, S, where, &lo, &ro, err);
        if (st == HS_OK)
            st = dml_first_pairs(&lo, g.rows->n_rows, &keep, err);
        for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&keep, int64_t); k++) {
            int64_t pi = HS_VEC_AT(&keep, int64_t, k);
            if (HS_VEC_PUSH(&rows, int64_t, HS_VEC_AT(&lo, int64_t, pi)) != HS_OK ||
                HS_VEC_PUSH(&srows, int64_t, HS_VEC_AT(&ro, int64_t, pi)) != HS_OK)
                st = hs_err_nomem(err, 8);
        }
        hs_buf_free(&lo);
        hs_buf_free(&ro);
        hs_buf_free(&keep);
    } else if (st == HS_OK) {
        st = dml_where_rows(c, &sc, &g, where, &rows, err);
    }
    int64_t n = (int64_t)HS_VEC_LEN(&rows, int64_t);
    if (st == HS_OK && json_array_size(c->returning)) {
        hs_batch *pb = NULL;
        st = dml_pair_batch(&sc, g.rows, S, (const int64_t *)rows.data, (const int64_t *)srows.data,
                        n, &pb, err);
        if (st == HS_OK)
            st = dml_returning_add(c, &sc, pb, err);
        hs_batch_free(pb);
    }
    hs_buf_free(&srows);
    for (int64_t k = 0; st == HS_OK && k < n; k++)
        st = dml_target_delete(x, &g, HS_VEC_AT(&rows, int64_t, k), err);
    *count = n;
    hs_buf_free(&rows);
    hs_batch_free(S);
    dml_dscope_clear(&sc);
    dml_target_clear(&g);
    return st;
}

static hs_status exec_update(dctx *c, txn *x, json_t *body, int64_t *count, hs_error *err)
{
    HS_TRY(dml_no_returning(c, body, err));
    target g;
    json_t *from = json_object_get(body, "fromClause");
    json_t *where = json_object_get(body, "whereClause");
    json_t *rv = json_object_get(body, "relation");
    dscope sc = {0};
    hs_batch *S = NULL, *pb = NULL;
    hs_buf trow = {0};
    hs_status st;
    if (json_array_size(from)) {
        st = dml_open_joined(c, x, rv, from, "UPDATE ... FROM", where, &g, &sc, &S, err);
    } else {
        st = dml_open_target(c, x, rv, where, &g, err);
        if (st == HS_OK)
            st = dml_dscope_add(&sc, &g.rows->schema, g.qual, 3, err);
    }
    json_t *set = json_object_get(body, "targetList");
    if (st == HS_OK && json_array_size(from)) {
        hs_buf lo = {0}, ro = {0}, keep = {0}, si = {0};
        if (st == HS_OK)
            st = dml_join_pairs_sub(c, &sc, g.rows, S, where, &lo, &ro, err);
        if (st == HS_OK)
            st = dml_first_pairs(&lo, g.rows->n_rows, &keep, err);
        for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&keep, int64_t); k++) {
            int64_t p = HS_VEC_AT(&keep, int64_t, k);
            if (HS_VEC_PUSH(&trow, int64_t, HS_VEC_AT(&lo, int64_t, p)) != HS_OK ||
                HS_VEC_PUSH(&si, int64_t, HS_VEC_AT(&ro, int64_t, p)) != HS_OK)
                st = hs_err_nomem(err, 8);
        }
        if (st == HS_OK)
            st = dml_pair_batch(&sc, g.rows, S, (const int64_t *)trow.data, (const int64_t *)si.data,
                            (int64_t)HS_VEC_LEN(&trow, int64_t), &pb, err);
        hs_buf_free(&lo);
        hs_buf_free(&ro);
        hs_buf_free(&keep);
        hs_buf_free(&si);
    } else if (st == HS_OK) {
        st = dml_where_rows(c, &sc, &g, where, &trow, err);
        if (st == HS_OK)
            st = dml_pair_batch(&sc, g.rows, NULL, (const int64_t *)trow.data, NULL,
                            (int64_t)HS_VEC_LEN(&trow, int64_t), &pb, err);
    }
    int64_t n = (int64_t)HS_VEC_LEN(&trow, int64_t);
    if (st == HS_OK)
        st = dml_write_updates(c, x, &g, &sc, pb, (const int64_t *)trow.data, n, set, err);
    *count = n;
    hs_buf_free(&trow);
    hs_batch_free(pb);
    hs_batch_free(S);
    dml_dscope_clear(&sc);
    dml_target_clear(&g);
    return st;
}

/* Rows for the table from a batch src whose column j goes to table column
 * map[j] (cast; -1 = not taken); other table columns null.  Added to x. */
hs_status dml_insert_batch(dctx *c, txn *x, const hs_batch *src, const int *map, int n_map,
                           hs_error *err)
{
    int nt = x->tschema.n_children;
    int64_t n = src->n_rows;
    hs_column **cols = hs_calloc((size_t)nt + 1, sizeof *cols);
    hs_status st = cols ? HS_OK : hs_err_nomem(err, 64);
    for (int j = 0; st == HS_OK && j < n_map; j++) {
        if (map[j] < 0)
            continue;   /* a source column not taken */
        const hs_field *to = &x->tschema.children[map[j]];
        st = dml_cast_column(c, src->cols[j], &src->schema.children[j], to, n, &cols[map[j]], err);
    }
    for (int i = 0; st == HS_OK && i < nt; i++)
        if (!cols[i])
            st = dml_null_column(c, &x->tschema.children[i], n, &cols[i], err);
    if (st == HS_OK && json_array_size(c->returning)) {
        /* RETURNING over the rows inserted: the table's columns */
        dscope sc = {0};
        hs_column **rc = hs_calloc((size_t)nt + 1, sizeof *rc);
        hs_batch *nb = NULL;
        if (!rc)
            st = hs_err_nomem(err, 64);
        if (st == HS_OK)
            st = dml_dscope_add(&sc, &x->tschema, c->ret_qual, 0, err);
        for (int i = 0; st == HS_OK && i < nt; i++)
            st = hs_col_slice(cols[i], 0, n, &rc[i], err);
        if (st == HS_OK)
            st = dml_mk_batch(&sc.schema, rc, nt, n, &nb, err);
        else
            for (int i = 0; rc && i < nt; i++)
                hs_col_free(rc[i]);
        hs_free(rc);
        if (st == HS_OK)
            st = dml_returning_add(c, &sc, nb, err);
        hs_batch_free(nb);
        dml_dscope_clear(&sc);
    }
    if (st == HS_OK)
        return (st = dml_add_rows(x, cols, NULL, n, err), hs_free(cols), st);
    for (int i = 0; cols && i < nt; i++)
        hs_col_free(cols[i]);
    hs_free(cols);
    return st;
}

static hs_status exec_insert(dctx *c, txn *x, json_t *body, int64_t *count, hs_error *err)
{
    HS_TRY(dml_no_returning(c, body, err));
    if (json_object_get(body, "onConflictClause"))
        return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "ON CONFLICT is not supported");
    json_t *rv = json_object_get(body, "relation");
    hs_table *t = NULL;
    HS_TRY(sq_table_lookup(c->s, rv, c->text, &t, err));
    const char *name = dml_jstr(rv, "relname");
    HS_TRY(dml_txn_use(c, x, t, name ? name : "", sq_loc(rv), err));
    c->ret_qual = dml_rel_qual(rv);
    int nt = x->tschema.n_children;
    json_t *cl = json_object_get(body, "cols");
    int n_cols = cl ? (int)json_array_size(cl) : nt;
    int *map = hs_calloc((size_t)n_cols + 1, sizeof *map);
    if (!map)
        return hs_err_nomem(err, 64);
    hs_status st = HS_OK;
    if (cl)
        st = dml_assign_targets(c, x, cl, false, map, err);
    else
        for (int i = 0; i < nt; i++)
            map[i] = i;
    json_t *sel = NULL;
    const char *k;
    hs_batch *src = NULL;
    if (st == HS_OK && sq_node(json_object_get(body, "selectStmt"), &k, &sel)) {
        st = dml_run_select(c, sel, n_cols, &src, err);
        if (st == HS_OK)
            st = dml_insert_batch(c, x, src, map, n_cols, err);
        *count = src && st == HS_OK ? src->n_rows : 0;
    } else if (st == HS_OK) {
        /* DEFAULT VALUES: one row of nulls */
        hs_field empty;
        hs_field_init(&empty, "", HS_TYPE_STRUCT, false);
        st = hs_batch_create(&empty, 1, &src, err);
        if (st == HS_OK) {
            src->n_rows = 1;
            st = dml_insert_batch(c, x, src, map, 0, err);
        }
        hs_field_clear(&empty);
        *count = 1;
    }
    hs_batch_free(src);
    hs_free(map);
    return st;
}

/* ------------------------------------------------------------------ */
/* the entry points                                                    */

static dml_state *state_of(sq_session *s, hs_error *err)
{
    if (!s->dml) {
        s->dml = hs_calloc(1, sizeof(dml_state));
        if (!s->dml)
            (void)hs_err_nomem(err, sizeof(dml_state));
    }
    return s->dml;
}

bool sq_txn_open(const sq_session *s)
{
    const dml_state *d = s->dml;
    return d && d->open;
}

void sq_dml_session_free(sq_session *s)
{
    dml_state *d = s->dml;
    if (!d)
        return;
    txn_clear(&d->tx);   /* an open transaction rolls back */
    hs_free(d);
    s->dml = NULL;
}

hs_status sq_txn_view(sq_session *s, hs_table *t, hs_batch **out, hs_error *err)
{
    *out = NULL;
    dml_state *d = s->dml;
    if (!d || !d->open || d->tx.t != t)
        return HS_OK;
    dctx c = {.s = s, .text = ""};
    target g = {0};
    hs_field schema = {0};
    hs_status st = dml_target_load(&c, &d->tx, &g, NULL, NULL, err);
    if (st == HS_OK && hs_field_copy(&d->tx.tschema, &schema) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK) {
        dml_renumber(&schema);
        st = hs_batch_create(&schema, 0, out, err);
    }
    for (int i = 0; st == HS_OK && i < (*out)->n_cols; i++) {   /* the table's columns move */
        hs_col_free((*out)->cols[i]);
        (*out)->cols[i] = g.rows->cols[i];
        g.rows->cols[i] = NULL;
    }
    if (st == HS_OK)
        (*out)->n_rows = g.rows->n_rows;
    if (schema.name)
        hs_field_clear(&schema);
    dml_target_clear(&g);
    if (st != HS_OK) {
        hs_batch_free(*out);
        *out = NULL;
    }
    return st;
}

static hs_status exec_transaction(dctx *c, dml_state *d, json_t *body, hs_result **out,
                                  hs_error *err)
{
    const char *kind = dml_jstr(body, "kind");
    if (!kind)
        kind = "";
    if (!strcmp(kind, "TRANS_STMT_BEGIN") || !strcmp(kind, "TRANS_STMT_START")) {
        /* PostgreSQL warns about a transaction already in progress; the
         * isolation level asked for is served as snapshot isolation */
        if (!d->open) {
            d->open = true;
            d->aborted = false;
        }
        return sq_result_tag("BEGIN", -1, out, err);
    }
    if (!strcmp(kind, "TRANS_STMT_COMMIT")) {
        bool was_aborted = d->aborted;
        d->open = d->aborted = false;
        if (was_aborted) {
            txn_clear(&d->tx);
            return sq_result_tag("ROLLBACK", -1, out, err);
        }
        HS_TRY(txn_commit(c, &d->tx, err));
        return sq_result_tag("COMMIT", -1, out, err);
    }
    if (!strcmp(kind, "TRANS_STMT_ROLLBACK")) {
        d->open = d->aborted = false;
        txn_clear(&d->tx);
        return sq_result_tag("ROLLBACK", -1, out, err);
    }
    return FAIL(c, HS_UNSUPPORTED, "0A000", -1, "%s is not supported (BEGIN, COMMIT, ROLLBACK "
                "are)", kind);
}

hs_status sq_exec_dml(sq_session *s, const char *kind, const json_t *stmt, const char *text,
                      hs_result **out, hs_error *err)
{
    *out = NULL;
    dctx c = {s, text, NULL, NULL, NULL};
    json_t *body = (json_t *)stmt;
    dml_state *d = state_of(s, err);
    if (!d)
        return HS_NOMEM;
    if (!strcmp(kind, "TransactionStmt"))
        return exec_transaction(&c, d, body, out, err);
    if (d->open && d->aborted)
        return sq_fail(s, err, HS_INVALID, "25P02", NULL, -1, "current transaction is aborted, "
                       "commands ignored until end of transaction block");
    txn local = {0};
    txn *x = d->open ? &d->tx : &local;
    int64_t n = 0;
    hs_status st;
    const char *tag;
    char buf[64];
    json_t *copy = NULL;
    if (!strcmp(kind, "UpdateStmt") || !strcmp(kind, "DeleteStmt") || !strcmp(kind, "MergeStmt")) {
        st = dml_inline_body(&c, body, &copy, err);
        if (st != HS_OK) {
            if (d->open)
                d->aborted = true;
            return st;
        }
        body = copy;
    }
    if (!strcmp(kind, "InsertStmt")) {
        st = exec_insert(&c, x, body, &n, err);
        tag = "INSERT 0";
    } else if (!strcmp(kind, "UpdateStmt")) {
        st = exec_update(&c, x, body, &n, err);
        tag = "UPDATE";
    } else if (!strcmp(kind, "DeleteStmt")) {
        st = exec_delete(&c, x, body, &n, err);
        tag = "DELETE";
    } else if (!strcmp(kind, "MergeStmt")) {
        st = dml_exec_merge(&c, x, body, &n, err);
        tag = "MERGE";
    } else if (!strcmp(kind, "CopyStmt")) {
        st = dml_exec_copy(&c, x, body, &n, err);
        tag = "COPY";
    } else {
        st = sq_fail(s, err, HS_UNSUPPORTED, "0A000", NULL, -1, "%s is not supported", kind);
        tag = "";
    }
    json_decref(copy);
    if (st != HS_OK) {
        if (d->open)
            d->aborted = true;
        txn_clear(&local);
        hs_batch_free(c.ret);
        return st;
    }
    if (!d->open) {
        st = txn_commit(&c, &local, err);
        if (st != HS_OK) {
            hs_batch_free(c.ret);
            return st;
        }
    }
    snprintf(buf, sizeof buf, "%s %lld", tag, (long long)n);
    if (!c.ret)
        return sq_result_tag(buf, n, out, err);
    /* RETURNING: the rows, with the command's tag */
    struct ArrowArrayStream rs;
    st = hs_arrow_export_one_batch(c.ret, &rs, err);
    if (st == HS_OK)
        st = sq_result_rows(buf, &rs, out, err);
    if (st == HS_OK)
        (*out)->rows_affected = n;
    return st;
}
