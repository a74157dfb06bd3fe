/*
 * exec/join.c - HashJoin and NestedLoopJoin (one implementation: a nested
 * loop is a hash join with no keys, where every right row is in the one
 * bucket).
 *
 * Build: the right child is read to the end into `right` (xo_rows, memory
 * accounted).  Each right row whose keys are all non-null is chained into
 * the bucket of its row key (exec_int.h; integers of any width encode
 * alike): head[key] -> first row, nxt[row] -> next row of the same key, in
 * input order.  Rows with a NULL key are in no bucket (they never match)
 * but still exist for RIGHT/FULL output and for the null-aware anti join.
 *
 * One integer-like key on both sides (or two packed into 64 bits) is
 * looked up by value in hs_imaps instead of by row key: the built keys are
 * split by a second hash of the value into n_parts tables (a power of two,
 * about two per thread; one without a pool or under J_PAR_MIN_ROWS rows),
 * which the pool's workers fill at once, each inserting its rows in input
 * order, so the chains keep input order and no two workers write the same
 * table or chain.  Build and probe prefetch the slot of a key a few rows
 * ahead (the tables are larger than the caches).
 *
 * Probe: per left batch, each row's key is looked up and (left row, right
 * row) pairs are collected; every XO_BATCH_ROWS pairs are flushed: the
 * pair batch (left columns taken by left index, right columns by right
 * index) is filtered by the residual, the passing pairs mark their left
 * and right rows matched and, for INNER/LEFT/RIGHT/FULL, are emitted.
 * After a left batch: LEFT/FULL emit its unmatched rows with NULL right
 * columns, SEMI its matched rows, ANTI its unmatched rows.  After the last
 * left batch: RIGHT/FULL emit the unmatched right rows with NULL left
 * columns.  Output batches wait in a queue.
 *
 * State machine: BUILD -> PROBE (per left batch) -> RIGHT_TAIL -> DONE.
 *
 * Reversed build (SEMI, ANTI and INNER with keys): the left child is read
 * first, up to REV_MAX_ROWS rows.  When it ends within that, its rows are
 * the built table instead (keys swapped) and the right child's batches
 * probe it.  SEMI/ANTI always do this: the probes mark the built rows they
 * match (every row of a bucket, the residual checked on each pair; rows
 * matched already take no more pairs), and at the end the marked (SEMI)
 * or unmarked (ANTI) left rows come out in input order, so the big side
 * (TPC-H Q4's lineitem under EXISTS) streams instead of being kept and
 * hashed.  INNER reads the right child ahead as well until it is larger
 * (rows x columns) than the left: if it ends first it is built as usual,
 * else the left is, and the pairs come out as probed (left columns from
 * the built rows).  Otherwise the right side is built as usual and the
 * left batches read ahead are probed first.  INNER over a right child of
 * unknown but bounded size (a filtered scan) reads that side first
 * instead (choose_build_right_first): built when it ends within
 * REV_MAX_ROWS, before the left child starts.  LEFT reads the left child
 * ahead only for the runtime filters below.  Batches read ahead are
 * accounted in ctx->mem_used while they wait, and with a memory limit the
 * reading ahead stops at a quarter of it.
 *
 * Spilling (grace hash join).  Under a memory limit, before a build batch
 * is appended (and before the table is made) the join estimates what the
 * build would hold: the built values (doubling as they grow), the chains
 * and the table.  When that could pass the limit and the join has keys,
 * it turns to partitions: the rows built so far and the rest of the build
 * input, then the whole probe input, are written to XO_SPILL_PARTS
 * partitions per side (spill.c) by a hash of the key seeded by the level,
 * so matching rows meet in one partition.  Rows with a NULL key match
 * nothing: they go round robin where the kind emits them unmatched
 * (LEFT/FULL/ANTI left rows, RIGHT/FULL right rows) and are dropped
 * elsewhere; a null-aware anti join that sees a NULL right key emits
 * nothing, else it is a plain anti join per partition.  Then each
 * partition is joined by a join of its own (same kind, keys and borrowed
 * residual) over readers of its rows, which chooses its build side again
 * and may spill one level deeper, up to XO_SPILL_MAX_LEVEL; past that an
 * HS_NOMEM error says that a partition does not fit (one key with too
 * many rows).  The output order of a spilled join is by partition.
 *
 * Runtime filters.  Once the table is built in memory (and not from a
 * whole table, whose keys a foreign key's all match), each integer key of
 * the built rows becomes a key filter (base/keyfilter.h: the keys' range
 * and a bitmap or bloom filter), offered to the probe child with
 * xo_push_keyfilter on the probe key's column, when the probe rows that
 * match no built row are dropped: probing with the left child for INNER,
 * SEMI and RIGHT, with the right child (reversed build) for INNER, SEMI and
 * ANTI; never for LEFT/FULL or a non-reversed ANTI, whose unmatched probe
 * rows are output.  Filters pass down through Filter, Project (bare
 * columns) and joins (a column of a side whose every row's output carries
 * that column's value: both sides of INNER, the left of LEFT/SEMI/ANTI,
 * the right of RIGHT) to a table scan, which drops rows whose key is NULL
 * or not in the set from the files it reads from then on (table/
 * rtfilter.h).  So that the probe scan has not started when the filter
 * comes, a left child whose row count is known before it runs (a scan
 * without a filter) and exceeds REV_MAX_ROWS is not read ahead: the read
 * ahead would end there and build the right side anyway.  The other way
 * round, INNER and LEFT joins whose left child was read ahead to its end
 * offer its keys to the right child before reading it
 * (send_read_ahead_filters).
 */
#include "exec/exec_int.h"
#include "base/hash.h"
#include "base/hashmap.h"

#include <stdio.h>

enum { J_BUILD = 0, J_PROBE, J_TAIL, J_DONE, J_SPILL_PROBE, J_SPILL_PARTS };

/* Integer-keyed hash tables built at once (see the top). */
#define J_MAX_PARTS 16
#define J_PAR_MIN_ROWS 65536
/* Rows between a key's prefetch and its lookup. */
#define J_PREFETCH 8

struct join_op;
/* The state of probing one left batch (one per parallel task). */
/* A parallel probe round (probe_parallel) takes at least `threads` left
 * batches and, when they are small (a selective filter below: TPC-H Q16's
 * partsupp after its runtime filter, 1,200 rows a batch), more of them up
 * to JOIN_ROUND_ROWS rows a thread or JOIN_ROUND_BATCHES batches a thread,
 * each probe state taking a run of consecutive batches. */
#define JOIN_ROUND_ROWS (XO_BATCH_ROWS / 2)
#define JOIN_ROUND_BATCHES 8

typedef struct probe {
    struct join_op *j;
    hs_buf kb;              /* key scratch */
    hs_batch *left;         /* the left batch */
    hs_batch *more[JOIN_ROUND_BATCHES - 1];   /* parallel: the batches after it */
    int n_more;
    uint8_t *lmatched;      /* per left row */
    hs_buf pl, pr;          /* pending pairs (int64 left row, right row) */
    uint8_t *sel;           /* residual selection, XO_BATCH_ROWS */
    xo_queue q;             /* output */
    uint64_t *ikeys;        /* integer key values of the batch (int_key, packed) */
    uint8_t *iok;           /* ... whether row i has one */
    int64_t icap;
} probe;

static void probe_clear(probe *p)
{
    hs_buf_free(&p->kb);
    hs_batch_free(p->left);
    p->left = NULL;
    for (int i = 0; i < p->n_more; i++)
        hs_batch_free(p->more[i]);
    p->n_more = 0;
    hs_free(p->lmatched);
    p->lmatched = NULL;
    hs_buf_free(&p->pl);
    hs_buf_free(&p->pr);
    hs_free(p->sel);
    p->sel = NULL;
    hs_free(p->ikeys);
    hs_free(p->iok);
    p->ikeys = NULL;
    p->iok = NULL;
    p->icap = 0;
    xo_queue_free(&p->q);
}

typedef struct join_op {
    xo_op op;
    xo_join_kind kind;
    int n_keys;
    int *lkeys, *rkeys;
    ex_expr *residual;
    hs_field pair_schema;   /* left || right, ids 1..n */
    int n_left, n_right;    /* columns */
    int state;
    xo_rows right;
    hs_map buckets;         /* key -> first right row */
    bool int_key;           /* one integer-like key: parts on its value */
    bool packed;            /* two integer keys whose built values fit in
                               int32: parts on both packed in 64 bits */
    hs_imap parts[J_MAX_PARTS];
    int n_parts;            /* power of two */
    unsigned part_shift;    /* 64 - log2(n_parts) */
    int64_t *nxt;           /* per right row: next of the same key, -1 */
    uint8_t *rmatched;      /* per right row (RIGHT/FULL) */
    bool right_has_null_key;
    int64_t accounted;
    probe main;             /* the build, sequential probes, the output queue */
    probe *par;             /* parallel probes (ctx->threads of them) or NULL */
    int n_par;
    hs_batch **par_in;      /* a round's batches (JOIN_ROUND_BATCHES a probe) */
    int64_t tail_pos;
    /* SEMI/ANTI with a small left side: built from the left rows, probed by
     * the right child (see "Reversed build" at the top) */
    bool rev;
    hs_batch **pend;        /* left batches read before choosing */
    int n_pend, pend_head;
    int64_t pend_acc;       /* their bytes, accounted (xo_mem_force) */
    /* spilling (grace hash join, see "Spilling" at the top) */
    int level;              /* 0, or the depth of a partition's join */
    bool spilling;
    bool borrowed_residual; /* a partition's join: the residual is the parent's */
    int probe_child;        /* the child whose rest is the probe input */
    xo_spill_parts sl, sr;  /* left and right rows by partition */
    int64_t rr;             /* round robin of the NULL-key rows */
    bool right_null_key;    /* a right row had a NULL key (null-aware anti) */
    int next_part;
    xo_op *sub;             /* the join of the partition being emitted */
    int64_t sub_spilled;    /* rows spilled again by the partitions' joins */
    int sub_levels;         /* levels below this one that spilled */
    int rtf_sent;           /* runtime filters a scan took */
    int rtf_read_ahead;     /* ... from the left rows read ahead, sent right */
    bool ra_filtered;       /* those were made (a reversed build sends no more) */
    bool whole[2];          /* the child is a whole table (xo_exact_rows known) */
} join_op;

/* Left rows read ahead before a SEMI/ANTI join chooses its build side. */
#define REV_MAX_ROWS (1 << 20)

static const char *kind_name(xo_join_kind k)
{
    static const char *n[] = {"Inner", "Left", "Right", "Full", "Semi", "Anti", "Null-aware Anti"};
    return (unsigned)k < 7 ? n[k] : "?";
}

static bool emits_pairs(xo_join_kind k)
{
    return k == XO_JOIN_INNER || k == XO_JOIN_LEFT || k == XO_JOIN_RIGHT || k == XO_JOIN_FULL;
}

/* ---- build ---- */

static hs_status key_of(probe *p, hs_column *const *cols, const int *keys, int64_t row,
                        bool *has_null)
{
    join_op *j = p->j;
    hs_buf_reset(&p->kb);
    *has_null = false;
    for (int k = 0; k < j->n_keys; k++) {
        const hs_column *c = cols[keys[k]];
        if (c->type == HS_TYPE_NA || !hs_col_is_valid(c, row)) {
            *has_null = true;
            return HS_OK;
        }
        if (!j->int_key && !j->packed)
            HS_TRY(xo_key_append(&p->kb, c, row));
    }
    return HS_OK;
}

/* The table of an integer key value: a multiplicative hash other than
 * hs_imap's own (which places the key inside the table by its top bits). */
static inline hs_imap *part_of(join_op *j, uint64_t v)
{
    return j->n_parts == 1 ? &j->parts[0]
                           : &j->parts[(v * 0xD6E8FEB86659FD93ull) >> j->part_shift];
}

/* Starts loading v's slot of m (hs_imap's home slot: hashmap.c). */
static inline void imap_prefetch(const hs_imap *m, uint64_t v)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[(v * 0x9E3779B97F4A7C15ull) >> m->shift]);
}

/* The integer key value of row `row` (int_key or packed): false when the
 * row has a NULL key or (packed) a value outside int32, which no built row
 * has. */
static inline bool int_key_at(const join_op *j, hs_column *const *cols, const int *keys,
                              int64_t row, uint64_t *v)
{
    bool big;
    const hs_column *c0 = cols[keys[0]];
    if (c0->type == HS_TYPE_NA || !hs_col_is_valid(c0, row))
        return false;
    int64_t a = xo_int_at(c0, row, &big);
    if (!j->packed) {
        *v = (uint64_t)a;
        return true;
    }
    const hs_column *c1 = cols[keys[1]];
    if (c1->type == HS_TYPE_NA || !hs_col_is_valid(c1, row))
        return false;
    int64_t b = xo_int_at(c1, row, &big);
    if (a != (int32_t)a || b != (int32_t)b)
        return false;
    *v = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    return true;
}

/* Looks up / inserts the key of row `row` (all keys non-null) in the
 * buckets: *head gets the bucket's first row, *found whether it existed
 * (inserting `row` as the head when it did not and insert is set). */
static hs_status bucket_find(probe *p, hs_column *const *cols, const int *keys, int64_t row,
                             bool insert, uint64_t *head, bool *found)
{
    join_op *j = p->j;
    if (j->packed || j->int_key) {
        uint64_t v;
        if (!int_key_at(j, cols, keys, row, &v)) {   /* no built key is out of int32 */
            *found = false;
            return HS_OK;
        }
        if (!insert) {
            *found = hs_imap_get(part_of(j, v), v, head);
            return HS_OK;
        }
        return hs_imap_get_or_put(part_of(j, v), v, (uint64_t)row, head, found);
    }
    if (!insert) {
        *found = hs_map_get(&j->buckets, p->kb.data, p->kb.len, head);
        return HS_OK;
    }
    return hs_map_get_or_put(&j->buckets, p->kb.data, p->kb.len, (uint64_t)row, head, found);
}

/* SEMI/ANTI: reads the left child ahead (up to REV_MAX_ROWS rows); when
 * it ends there, its rows become the built table (j->rev). */
static hs_status pend_push(hs_batch ***arr, int *n, int *cap, hs_batch *b, hs_error *err)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        hs_batch **np = hs_realloc(*arr, (size_t)nc * sizeof *np);
        if (!np) {
            hs_batch_free(b);
            return hs_err_nomem(err, 0);
        }
        *arr = np;
        *cap = nc;
    }
    (*arr)[(*n)++] = b;
    return HS_OK;
}

/* Batches read ahead are accounted as they are read, so that the build
 * that follows sees them in ctx->mem_used. */
static void pend_account(join_op *j, int64_t bytes)
{
    if (bytes > 0)
        xo_mem_force(j->op.ctx, bytes);
    else
        xo_mem_release(j->op.ctx, -bytes);
    j->pend_acc += bytes;
    xo_op_held(&j->op, j->pend_acc + j->right.bytes + j->accounted);
}

/* With a memory limit, reading ahead stops at a quarter of it. */
static bool read_ahead_full(const join_op *j)
{
    const xo_ctx *ctx = j->op.ctx;
    return ctx && ctx->mem_limit > 0 && xo_mem_used(ctx) > ctx->mem_limit / 4;
}

static bool build_should_spill(const join_op *j, const hs_batch *b);
static hs_status spill_batch(join_op *j, const hs_batch *b, int side, hs_error *err);
static hs_status spill_build(join_op *j, hs_batch *b, bool more, hs_error *err);

/* Appends b (taken) to the built rows of side `side` (0: a reversed
 * build), or to the partitions when that could pass the memory limit
 * (the side's input has ended: the rest comes through here too). */
static hs_status build_append(join_op *j, hs_batch *b, int side, hs_error *err)
{
    xo_op *op = &j->op;
    if (!j->spilling && build_should_spill(j, b))
        return spill_build(j, b, false, err);
    hs_status st = j->spilling ? spill_batch(j, b, side, err)
                               : xo_rows_append(&j->right, op->ctx, op->name, b, err);
    hs_batch_free(b);
    if (!j->spilling)
        xo_op_held(op, j->right.bytes + j->pend_acc);
    return st;
}

/* Moves the left batches read ahead into the built rows and swaps the keys. */
static hs_status build_from_left(join_op *j, hs_error *err)
{
    xo_op *op = &j->op;
    HS_TRY(xo_rows_init(&j->right, &op->children[0]->schema, err));
    int *t = j->lkeys;
    j->lkeys = j->rkeys;
    j->rkeys = t;
    j->rev = true;
    for (int i = 0; i < j->n_pend; i++) {
        pend_account(j, -xo_batch_bytes(j->pend[i]));
        hs_batch *b = j->pend[i];
        j->pend[i] = NULL;
        HS_TRY(build_append(j, b, 0, err));
    }
    j->n_pend = 0;
    return HS_OK;
}

static hs_status send_read_ahead_filters(join_op *j, hs_error *err);

/* Frees the batches read ahead in a[0..n) that were not moved (NULL). */
static void pend_drop(join_op *j, hs_batch **a, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i]) {
            pend_account(j, -xo_batch_bytes(a[i]));
            hs_batch_free(a[i]);
        }
    hs_free(a);
}

/* Reads child `side` ahead into *a (n, cap) until it ends (*ended) or
 * passes `limit` rows (*rows) or the read ahead's memory share. */
static hs_status read_ahead(join_op *j, int side, int64_t limit, hs_batch ***a, int *n, int *cap,
                            int64_t *rows, bool *ended, hs_error *err)
{
    *ended = false;
    while (*rows <= limit && !read_ahead_full(j)) {
        hs_batch *b;
        HS_TRY(xo_next(j->op.children[side], &b, err));
        if (!b) {
            *ended = true;
            return HS_OK;
        }
        int64_t bytes = xo_batch_bytes(b);
        *rows += b->n_rows;
        HS_TRY(pend_push(a, n, cap, b, err));
        pend_account(j, bytes);
    }
    return HS_OK;
}

/* INNER whose right side's size is not known but bounded (a filtered
 * scan) and not known to be the larger: the right side, which the planner chose to
 * build, is read ahead first (up to REV_MAX_ROWS rows), so that when it
 * ends there the left scan starts with the runtime filters in place
 * (TPC-H Q3's lineitem under orders with a date filter, 727K rows; the
 * left side read ahead first, 1M rows, came to the scan unfiltered).
 * When it ends there it is built, as a right side known to be that small
 * is (reading any of the left side would start its scan's first files
 * unfiltered).  Otherwise the left side is read ahead up to REV_MAX_ROWS
 * and built when it ends there, the right batches read ahead probed
 * first; else the right side is built (its batches read ahead, then the
 * rest) and the left batches read ahead are probed first. */
static hs_status choose_build_right_first(join_op *j, bool *right_read, hs_error *err)
{
    hs_batch **rp = NULL;
    int nr = 0, rcap = 0, lcap = 0;
    int64_t rrows = 0, lrows = 0;
    bool rend = false, lend = false;
    hs_status st = read_ahead(j, 1, REV_MAX_ROWS, &rp, &nr, &rcap, &rrows, &rend, err);
    if (st == HS_OK && !rend)
        st = read_ahead(j, 0, REV_MAX_ROWS, &j->pend, &j->n_pend, &lcap, &lrows, &lend, err);
    if (st == HS_OK && lend) {
        st = build_from_left(j, err);
        if (st == HS_OK) {
            hs_free(j->pend);
            j->pend = rp;
            j->n_pend = nr;
            j->pend_head = 0;
            rp = NULL;
            nr = 0;
        }
    } else if (st == HS_OK) {
        st = xo_rows_init(&j->right, &j->op.children[1]->schema, err);
        for (int i = 0; i < nr && st == HS_OK; i++) {
            pend_account(j, -xo_batch_bytes(rp[i]));
            hs_batch *b = rp[i];
            rp[i] = NULL;
            st = build_append(j, b, 1, err);
        }
        while (st == HS_OK && !rend) {
            hs_batch *b;
            st = xo_next(j->op.children[1], &b, err);
            if (st == HS_OK && !b)
                rend = true;
            else if (st == HS_OK)
                st = build_append(j, b, 1, err);
        }
        *right_read = true;
    }
    pend_drop(j, rp, nr);
    return st;
}

/* SEMI/ANTI/INNER/LEFT with keys: reads the left child ahead (up to
 * REV_MAX_ROWS rows); when it ends there, its keys filter the right side
 * (INNER, LEFT), SEMI/ANTI build on it (j->rev), and INNER reads the
 * right child ahead too, building on whichever side ended smaller in rows
 * x columns (the right one as usual when it did: *right_read).  INNER may
 * read the right side first (choose_build_right_first). */

static hs_status choose_build(join_op *j, bool *right_read, hs_error *err)
{
    xo_op *op = &j->op;
    *right_read = false;
    bool semi = j->kind == XO_JOIN_SEMI || j->kind == XO_JOIN_ANTI;
    if ((!semi && j->kind != XO_JOIN_INNER && j->kind != XO_JOIN_LEFT) || j->n_keys == 0)
        return HS_OK;
    if (j->kind == XO_JOIN_LEFT && j->whole[0])
        return HS_OK;   /* read ahead for filters only, and a whole table sends none */
    /* a left side known to be larger than the read ahead: the right side
     * is built as it would be after reading ahead, and the left scan has
     * not started when the runtime filters come */
    if (xo_exact_rows(op->children[0]) > REV_MAX_ROWS)
        return HS_OK;
    /* a right side known to have at most REV_MAX_ROWS rows, and fewer than
     * the left side may have: built without reading the left side ahead
     * (the left scan then starts with the runtime filters in place) */
    int64_t lmax = xo_max_rows(op->children[0]), rmax = xo_max_rows(op->children[1]);
    if (j->kind != XO_JOIN_ANTI && rmax >= 0 && rmax <= REV_MAX_ROWS && lmax > rmax)
        return HS_OK;
    if (j->kind == XO_JOIN_INNER && xo_exact_rows(op->children[1]) < 0 && rmax >= 0 &&
        (lmax < 0 || lmax > rmax))
        return choose_build_right_first(j, right_read, err);
    int64_t rows = 0;
    int cap = 0;
    for (;;) {
        hs_batch *b;
        HS_TRY(xo_next(op->children[0], &b, err));
        if (!b)
            break;
        int64_t bytes = xo_batch_bytes(b);
        HS_TRY(pend_push(&j->pend, &j->n_pend, &cap, b, err));
        pend_account(j, bytes);
        rows += b->n_rows;
        if (rows > REV_MAX_ROWS || read_ahead_full(j))
            return HS_OK;
    }
    /* the whole left side is here: its keys filter the right side before
     * the right scan starts */
    if (semi)
        return build_from_left(j, err);   /* its runtime filters go right */
    HS_TRY(send_read_ahead_filters(j, err));
    if (j->kind == XO_JOIN_LEFT)
        return HS_OK;   /* the right side is built, the read ahead probed first */
    hs_batch **rp = NULL;
    int nr = 0, rcap = 0;
    int64_t rrows = 0;
    bool rend = false;
    hs_status st = HS_OK;
    while (st == HS_OK) {
        hs_batch *b;
        st = xo_next(op->children[1], &b, err);
        if (st != HS_OK)
            break;
        if (!b) {
            rend = true;
            break;
        }
        rrows += b->n_rows;
        int64_t bytes = xo_batch_bytes(b);
        st = pend_push(&rp, &nr, &rcap, b, err);
        if (st == HS_OK)
            pend_account(j, bytes);
        /* sizes as rows x columns: the built rows are kept whole */
        if (rrows * (j->n_right + 1) > rows * (j->n_left + 1) || read_ahead_full(j))
            break;
    }
    if (st == HS_OK && rend) {
        /* the right side is the smaller: built as usual */
        st = xo_rows_init(&j->right, &op->children[1]->schema, err);
        for (int i = 0; i < nr && st == HS_OK; i++) {
            pend_account(j, -xo_batch_bytes(rp[i]));
            hs_batch *b = rp[i];
            rp[i] = NULL;
            st = build_append(j, b, 1, err);
        }
        *right_read = true;
    } else if (st == HS_OK) {
        /* the left side is the smaller: built; the right batches read
         * ahead are probed first */
        st = build_from_left(j, err);
        if (st == HS_OK) {
            hs_free(j->pend);
            j->pend = rp;
            j->n_pend = nr;
            j->pend_head = 0;
            rp = NULL;
            nr = 0;
        }
    }
    for (int i = 0; i < nr; i++)
        if (rp[i]) {
            pend_account(j, -xo_batch_bytes(rp[i]));
            hs_batch_free(rp[i]);
        }
    hs_free(rp);
    return st;
}

/* Sizes an empty imap for n keys at once (the load hs_imap keeps, at most
 * 0.7), so that building does not rehash as it grows. */
static hs_status imap_presize(hs_imap *m, int64_t n)
{
    if (m->slots || n <= 0)
        return HS_OK;
    size_t cap = 16;
    while ((size_t)n * 10 > cap * 7 && cap < ((size_t)1 << 30))
        cap <<= 1;
    m->slots = hs_calloc(cap, sizeof *m->slots);
    if (!m->slots)
        return HS_NOMEM;
    m->cap = cap;
    m->count = 0;
    m->shift = (unsigned)(64 - __builtin_ctzll((unsigned long long)cap));
    return HS_OK;
}

/* One table of an integer-keyed build: its rows in input order and their
 * key values. */
typedef struct build_part {
    join_op *j;
    hs_imap *m;
    const int64_t *rows;
    const uint64_t *keys;
    int64_t n;
    int64_t *tail;          /* shared, per row: the chain's last row */
} build_part;

static hs_status build_part_run(void *arg, hs_error *err)
{
    build_part *b = arg;
    join_op *j = b->j;
    int64_t *nxt = j->nxt, *tail = b->tail;
    for (int64_t i = 0; i < b->n; i++) {
        if (i + J_PREFETCH < b->n)
            imap_prefetch(b->m, b->keys[i + J_PREFETCH]);
        int64_t r = b->rows[i];
        uint64_t head;
        bool found;
        if (hs_imap_get_or_put(b->m, b->keys[i], (uint64_t)r, &head, &found) != HS_OK)
            return hs_err_nomem(err, 0);
        if (found) {
            nxt[tail[head]] = r;
            tail[head] = r;
        } else {
            tail[r] = r;
        }
        if ((i & 65535) == 65535 && xo_cancelled(j->op.ctx))
            return xo_check_cancel(j->op.ctx, err);
    }
    return HS_OK;
}

static bool can_parallel(const join_op *j);

/* Chains the n built rows into the integer-keyed tables (see the top):
 * rows grouped by table (a counting sort, input order within a table),
 * then the tables filled, at once on the pool when there are several. */
static hs_status build_int(join_op *j, int64_t n, int64_t *tail, hs_error *err)
{
    xo_ctx *ctx = j->op.ctx;
    int parts = 1;
    if (can_parallel(j) && n >= J_PAR_MIN_ROWS)
        while (parts < 2 * ctx->threads && parts < J_MAX_PARTS)
            parts <<= 1;
    j->n_parts = parts;
    j->part_shift = (unsigned)(64 - __builtin_ctz((unsigned)parts));
    uint8_t *pid = hs_malloc((size_t)(n ? n : 1));
    int64_t *rows = hs_malloc((size_t)(n ? n : 1) * sizeof *rows);
    uint64_t *keys = hs_malloc((size_t)(n ? n : 1) * sizeof *keys);
    int64_t cnt[J_MAX_PARTS] = {0}, off[J_MAX_PARTS];
    hs_status st = pid && rows && keys ? HS_OK : hs_err_nomem(err, (size_t)n * 17);
    hs_column *const *cols = j->right.b ? j->right.b->cols : NULL;
    for (int64_t r = 0; r < n && st == HS_OK; r++) {
        uint64_t v;
        j->nxt[r] = -1;
        if (!int_key_at(j, cols, j->rkeys, r, &v)) {
            j->right_has_null_key = true;   /* only NULLs: every built value fits */
            pid[r] = UINT8_MAX;
            continue;
        }
        int p = (int)(part_of(j, v) - j->parts);
        pid[r] = (uint8_t)p;
        cnt[p]++;
    }
    int64_t at = 0;
    for (int p = 0; p < parts; p++) {
        off[p] = at;
        at += cnt[p];
        if (st == HS_OK && imap_presize(&j->parts[p], cnt[p]) != HS_OK)
            st = hs_err_nomem(err, (size_t)cnt[p] * 16);
    }
    for (int64_t r = 0; r < n && st == HS_OK; r++) {
        uint64_t v;
        if (pid[r] == UINT8_MAX || !int_key_at(j, cols, j->rkeys, r, &v))
            continue;
        int64_t k = off[pid[r]]++;
        rows[k] = r;
        keys[k] = v;
    }
    build_part bp[J_MAX_PARTS];
    for (int p = 0; p < parts; p++) {
        int64_t first = off[p] - cnt[p];
        bp[p] = (build_part){.j = j, .m = &j->parts[p], .rows = rows + first,
                             .keys = keys + first, .n = cnt[p], .tail = tail};
    }
    if (st == HS_OK && parts == 1) {
        st = build_part_run(&bp[0], err);
    } else if (st == HS_OK) {
        hs_group *g;
        st = hs_group_create(ctx->pool, &g, err);
        if (st == HS_OK) {
            hs_status sub = HS_OK;
            for (int p = 0; p < parts && sub == HS_OK; p++)
                sub = hs_group_submit(g, build_part_run, &bp[p]);
            st = hs_group_wait(g, err);
            hs_group_destroy(g);
            if (st == HS_OK && sub != HS_OK)
                st = hs_err_nomem(err, 0);
        }
    }
    hs_free(pid);
    hs_free(rows);
    hs_free(keys);
    return st;
}

/* ---- spilling (see the top) ---- */

static bool can_spill(const join_op *j)
{
    const xo_ctx *ctx = j->op.ctx;
    return ctx && ctx->mem_limit > 0 && j->n_keys > 0 && j->level < XO_SPILL_MAX_LEVEL;
}

/* Bytes a built row costs beyond its values: nxt and rmatched (9), the
 * chains' tails (8), the integer build's scratch (17) and about two table
 * slots; for byte-string keys the keys too (b: rows like the built ones). */
static int64_t row_overhead(const join_op *j, const hs_batch *b)
{
    const hs_field *bs = &j->op.children[j->rev ? 0 : 1]->schema;
    bool ints = j->int_key || (j->n_keys == 2 && xo_is_int_type(bs->children[j->rkeys[0]].type) &&
                               xo_is_int_type(bs->children[j->rkeys[1]].type));
    if (ints)
        return 9 + 8 + 17 + 3 * (int64_t)sizeof(hs_imap_slot);
    int64_t o = 9 + 8 + 3 * (int64_t)sizeof(hs_map_slot);
    for (int k = 0; k < j->n_keys; k++) {
        const hs_column *c = b->cols[j->rkeys[k]];
        o += 9 + (c->offsets.data && b->n_rows ? (int64_t)c->values.len / b->n_rows + 4 : 0);
    }
    return o;
}

/* True when appending b to the built rows could pass the limit: its
 * values, the built columns doubling as they grow, the table over all. */
static bool build_should_spill(const join_op *j, const hs_batch *b)
{
    if (!can_spill(j))
        return false;
    const xo_ctx *ctx = j->op.ctx;
    int64_t bb = xo_batch_bytes(b), grow = bb > j->right.bytes ? bb : j->right.bytes;
    int64_t rows = xo_rows_count(&j->right) + b->n_rows;
    return xo_mem_used(ctx) + grow + rows * row_overhead(j, b) > ctx->mem_limit;
}

/* An out-of-memory error of a join that may not spill deeper. */
static hs_status too_big(join_op *j, hs_status st, hs_error *err)
{
    if (st != HS_NOMEM || j->level < XO_SPILL_MAX_LEVEL || !j->op.ctx)
        return st;
    hs_err_clear(err);
    return hs_err_set(err, HS_NOMEM,
                      "%s: out of memory: a partition of the join does not fit in the memory "
                      "limit of %lld bytes after %d levels of spilling (too many rows with one "
                      "join key)", j->op.name, (long long)j->op.ctx->mem_limit, j->level);
}

/* Writes the rows of b (side 0: left, 1: right) to their partitions: by a
 * hash of the key, NULL keys round robin (they match nothing; dropped
 * where the join kind does not emit them unmatched). */
static hs_status spill_batch(join_op *j, const hs_batch *b, int side, hs_error *err)
{
    xo_join_kind k = j->kind;
    const int *keys = side ? j->rkeys : j->lkeys;
    bool keep_null = side ? (k == XO_JOIN_RIGHT || k == XO_JOIN_FULL)
                          : (k == XO_JOIN_LEFT || k == XO_JOIN_FULL || k == XO_JOIN_ANTI);
    int64_t n = b->n_rows;
    uint8_t *part = hs_malloc((size_t)(n ? n : 1));
    if (!part)
        return hs_err_nomem(err, (size_t)n);
    uint64_t seed = xo_spill_seed(j->level);
    hs_buf *kb = &j->main.kb;
    hs_status st = HS_OK;
    for (int64_t i = 0; i < n && st == HS_OK; i++) {
        hs_buf_reset(kb);
        bool null = false;
        for (int c = 0; c < j->n_keys && !null && st == HS_OK; c++) {
            const hs_column *col = b->cols[keys[c]];
            if (col->type == HS_TYPE_NA || !hs_col_is_valid(col, i))
                null = true;
            else if (xo_key_append(kb, col, i) != HS_OK)
                st = hs_err_nomem(err, 0);
        }
        if (null) {
            if (side && k == XO_JOIN_ANTI_NULL_AWARE)
                j->right_null_key = true;
            part[i] = keep_null ? (uint8_t)(j->rr++ % XO_SPILL_PARTS) : UINT8_MAX;
        } else {
            part[i] = (uint8_t)(hs_xxh64(kb->data, kb->len, seed) % XO_SPILL_PARTS);
        }
    }
    if (st == HS_OK)
        st = xo_spill_parts_write(j->op.ctx, side ? &j->sr : &j->sl, b, part, err);
    hs_free(part);
    return st;
}

/* Turns to the grace join: the rows built so far, b (taken; may be NULL)
 * and the rest of the build input (more: it has not ended) go to their
 * partitions; the built
 * rows' memory is freed.  A reversed build turns back (the partitions'
 * joins choose their own build sides). */
static hs_status spill_build(join_op *j, hs_batch *b, bool more, hs_error *err)
{
    xo_op *op = &j->op;
    bool rev = j->rev;
    if (rev) {
        int *t = j->lkeys;
        j->lkeys = j->rkeys;
        j->rkeys = t;
        j->rev = false;
    }
    j->probe_child = rev ? 1 : 0;
    j->spilling = true;
    int side = rev ? 0 : 1;
    int64_t n = xo_rows_count(&j->right);
    hs_status st = HS_OK;
    for (int64_t at = 0; at < n && st == HS_OK; at += XO_BATCH_ROWS) {
        hs_batch *t;
        st = xo_batch_rows(j->right.b, at, n - at < XO_BATCH_ROWS ? n - at : XO_BATCH_ROWS, &t,
                           err);
        if (st == HS_OK) {
            st = spill_batch(j, t, side, err);
            hs_batch_free(t);
        }
    }
    xo_rows_free(&j->right, op->ctx);
    if (st == HS_OK && b)
        st = spill_batch(j, b, side, err);
    hs_batch_free(b);
    while (st == HS_OK && !rev && more) {
        hs_batch *t;
        st = xo_next(op->children[1], &t, err);
        if (st != HS_OK || !t)
            break;
        st = spill_batch(j, t, 1, err);
        hs_batch_free(t);
    }
    return st;
}

/* The probe input (the batches read ahead, then the rest of its child)
 * to its partitions. */
static hs_status spill_probe(join_op *j, hs_error *err)
{
    int side = j->probe_child;
    if (j->kind == XO_JOIN_ANTI_NULL_AWARE && j->right_null_key)
        return HS_OK;   /* x NOT IN (a set with a NULL) is never true */
    for (;;) {
        hs_batch *b;
        if (j->pend_head < j->n_pend) {
            b = j->pend[j->pend_head];
            j->pend[j->pend_head++] = NULL;
            pend_account(j, -xo_batch_bytes(b));
        } else {
            HS_TRY(xo_next(j->op.children[side], &b, err));
            if (!b)
                return HS_OK;
        }
        hs_status st = spill_batch(j, b, side, err);
        hs_batch_free(b);
        HS_TRY(st);
    }
}

static hs_status join_make(const char *name, xo_op *left, xo_op *right, xo_join_kind kind,
                           int n_keys, const int *lkeys, const int *rkeys, ex_expr *residual,
                           xo_op **out, hs_error *err);

/* j->sub = a join like j of partition p's rows, one level deeper. */
static hs_status open_partition(join_op *j, int p, hs_error *err)
{
    xo_op *op = &j->op, *rl = NULL, *rr = NULL, *sub;
    HS_TRY(xo_spill_reader(op->ctx, &j->sl.sp, &op->children[0]->schema, &j->sl.offs[p], &rl,
                           err));
    hs_status st = xo_spill_reader(op->ctx, &j->sr.sp, &op->children[1]->schema, &j->sr.offs[p],
                                   &rr, err);
    if (st != HS_OK) {
        xo_free(rl);
        return st;
    }
    /* null-aware anti: the right rows had no NULL key (else nothing is
     * probed) and NULL left keys were dropped, so a plain anti join */
    xo_join_kind k = j->kind == XO_JOIN_ANTI_NULL_AWARE ? XO_JOIN_ANTI : j->kind;
    HS_TRY(join_make(op->name, rl, rr, k, j->n_keys, j->lkeys, j->rkeys, NULL, &sub, err));
    join_op *sj = (join_op *)sub;
    sj->residual = j->residual;
    sj->borrowed_residual = true;
    sj->level = j->level + 1;
    j->sub = sub;
    return HS_OK;
}

/* After spilling: each partition's join in turn. */
static hs_status next_spilled(join_op *j, hs_batch **out, hs_error *err)
{
    xo_join_kind k = j->kind;
    for (;;) {
        if (j->sub) {
            HS_TRY(xo_next(j->sub, out, err));
            xo_op_held(&j->op, j->sub->mem_peak);
            if (*out)
                return HS_OK;
            join_op *sj = (join_op *)j->sub;
            j->sub_spilled += sj->sl.total + sj->sr.total + sj->sub_spilled;
            if (sj->spilling && sj->sub_levels + 1 > j->sub_levels)
                j->sub_levels = sj->sub_levels + 1;
            xo_free(j->sub);
            j->sub = NULL;
        }
        if (j->next_part >= XO_SPILL_PARTS) {
            xo_spill_close(&j->sl.sp);
            xo_spill_close(&j->sr.sp);
            j->state = J_DONE;
            return HS_OK;
        }
        int p = j->next_part++;
        bool hl = j->sl.rows[p] > 0, hr = j->sr.rows[p] > 0;
        bool need = k == XO_JOIN_FULL ? hl || hr
                    : k == XO_JOIN_RIGHT ? hr
                    : k == XO_JOIN_INNER || k == XO_JOIN_SEMI ? hl && hr
                                                                : hl;
        if (need)
            HS_TRY(open_partition(j, p, err));
    }
}

static hs_status join_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const join_op *j = (const join_op *)op;
    if (j->rtf_sent > 0 &&
        hs_buf_printf(out, "runtime filters: %d on the %s side's keys sent to its scan\n",
                      j->rtf_sent, j->rev ? "right" : "left") != HS_OK)
        return hs_err_nomem(err, 0);
    if (j->rtf_read_ahead > 0 &&
        hs_buf_printf(out, "runtime filters: %d on the right side's keys (from the left rows "
                      "read ahead) sent to its scan\n", j->rtf_read_ahead) != HS_OK)
        return hs_err_nomem(err, 0);
    if (!j->spilling)
        return HS_OK;
    if (hs_buf_printf(out, "spilled: %lld left rows and %lld right rows to %d partitions "
                      "(%lld bytes), %lld rows again in %d deeper levels",
                      (long long)j->sl.total, (long long)j->sr.total, XO_SPILL_PARTS,
                      (long long)(j->sl.sp.written + j->sr.sp.written),
                      (long long)j->sub_spilled, j->sub_levels) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

/* ---- runtime filters (see the top) ---- */

/* Whether the probe rows that match no built row are dropped. */
static bool probe_unmatched_dropped(const join_op *j)
{
    if (j->rev)
        return j->kind == XO_JOIN_INNER || j->kind == XO_JOIN_SEMI || j->kind == XO_JOIN_ANTI;
    return j->kind == XO_JOIN_INNER || j->kind == XO_JOIN_SEMI || j->kind == XO_JOIN_RIGHT;
}

static bool filter_key_type(hs_type t)
{
    return xo_is_int_type(t) && t != HS_TYPE_UINT64 && t != HS_TYPE_DATE32;
}

/* Builds a key filter per integer key of the built rows and offers it to
 * the probe child. */
static hs_status send_runtime_filters(join_op *j, hs_error *err)
{
    xo_op *probe_child = j->op.children[j->rev ? 1 : 0];
    /* built on a whole table (no filter): a foreign key join, whose filter
     * would keep every row */
    if (j->n_keys == 0 || j->spilling || !probe_unmatched_dropped(j) ||
        !probe_child->push_keyfilter || j->whole[j->rev ? 0 : 1] || (j->rev && j->ra_filtered))
        return HS_OK;
    int64_t n = xo_rows_count(&j->right);
    int64_t *keys = NULL;
    for (int k = 0; k < j->n_keys; k++) {
        const hs_column *c = n > 0 ? j->right.b->cols[j->rkeys[k]] : NULL;
        if (c && !filter_key_type(c->type))
            continue;
        if (!filter_key_type(probe_child->schema.children[j->lkeys[k]].type))
            continue;
        if (!keys && !(keys = hs_malloc((size_t)(n ? n : 1) * sizeof *keys)))
            return hs_err_nomem(err, (size_t)n * 8);
        int64_t m = 0;
        bool big;
        for (int64_t r = 0; r < n; r++)
            if (hs_col_is_valid(c, r))
                keys[m++] = xo_int_at(c, r, &big);
        hs_keyfilter *kf = NULL;
        hs_status st = hs_keyfilter_build(keys, m, &kf, err);
        if (st != HS_OK) {
            hs_free(keys);
            return st;
        }
        j->rtf_sent += xo_push_keyfilter(probe_child, j->lkeys[k], kf);
    }
    hs_free(keys);
    return HS_OK;
}

/* The left side read ahead to its end (choose_build, INNER and LEFT): a
 * key filter per integer key of its rows, offered to the right child
 * before it is read, whose rows that match no left row never reach the
 * output (SEMI/ANTI build on the left then, and send the same filters
 * after their build; RIGHT/FULL output them).  TPC-H Q17's and Q20's decorrelated aggregates over lineitem
 * then read only the parts the outer side has; Q9's orders only the
 * orders of the lineitem rows left.  Not from a whole table (a foreign
 * key's side: its keys keep everything). */
static hs_status send_read_ahead_filters(join_op *j, hs_error *err)
{
    xo_op *rc = j->op.children[1];
    const hs_field *ls = &j->op.children[0]->schema;
    if (j->whole[0] || !rc->push_keyfilter || j->n_pend == 0)
        return HS_OK;
    int64_t n = 0;
    for (int i = 0; i < j->n_pend; i++)
        n += j->pend[i]->n_rows;
    /* a right side that has fewer rows than the left keys (a dimension
     * such as Q9's supplier or nation): little to drop, not worth it */
    int64_t rmax = xo_max_rows(rc);
    if (rmax >= 0 && rmax <= n)
        return HS_OK;
    j->ra_filtered = true;
    int64_t *keys = NULL;
    for (int k = 0; k < j->n_keys; k++) {
        if (!filter_key_type(ls->children[j->lkeys[k]].type) ||
            !filter_key_type(rc->schema.children[j->rkeys[k]].type))
            continue;
        if (!keys && !(keys = hs_malloc((size_t)(n ? n : 1) * sizeof *keys)))
            return hs_err_nomem(err, (size_t)n * 8);
        int64_t m = 0;
        bool big;
        for (int i = 0; i < j->n_pend; i++) {
            const hs_column *c = j->pend[i]->cols[j->lkeys[k]];
            if (!filter_key_type(c->type))
                continue;   /* an all-NULL column (HS_TYPE_NA) adds no key */
            for (int64_t r = 0; r < j->pend[i]->n_rows; r++)
                if (hs_col_is_valid(c, r))
                    keys[m++] = xo_int_at(c, r, &big);
        }
        hs_keyfilter *kf = NULL;
        hs_status st = hs_keyfilter_build(keys, m, &kf, err);
        if (st != HS_OK) {
            hs_free(keys);
            return st;
        }
        j->rtf_read_ahead += xo_push_keyfilter(rc, j->rkeys[k], kf);
    }
    hs_free(keys);
    return HS_OK;
}

/* A filter on an output column of this join, offered by a join above:
 * passes to the child the column comes from when every output row carries
 * that child row's value (see the top). */
static bool join_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    const join_op *j = (const join_op *)op;
    xo_join_kind k = j->kind;
    if (col < j->n_left && k != XO_JOIN_RIGHT && k != XO_JOIN_FULL)
        return xo_push_keyfilter(op->children[0], col, kf);
    if (col >= j->n_left && (k == XO_JOIN_INNER || k == XO_JOIN_RIGHT))
        return xo_push_keyfilter(op->children[1], col - j->n_left, kf);
    hs_keyfilter_free(kf);
    return false;
}

/* At most the rows the join returns: SEMI/ANTI the left side's bound;
 * the others the product of the sides' bounds when that is at most
 * REV_MAX_ROWS (small dimension joins such as supplier x nation; a larger
 * product says nothing useful), else unknown. */
static int64_t join_max_rows(const xo_op *op)
{
    const join_op *j = (const join_op *)op;
    int64_t l = xo_max_rows(op->children[0]);
    if (j->kind == XO_JOIN_SEMI || j->kind == XO_JOIN_ANTI || j->kind == XO_JOIN_ANTI_NULL_AWARE)
        return l;
    int64_t r = xo_max_rows(op->children[1]), p;
    if (l < 0 || r < 0 || __builtin_mul_overflow(l + 1, r + 1, &p) || p > REV_MAX_ROWS)
        return -1;
    return p;
}

static hs_status join_build(join_op *j, hs_error *err)
{
    xo_op *op = &j->op;
    xo_op *rc = op->children[1];
    bool right_read;
    j->whole[0] = xo_exact_rows(op->children[0]) >= 0;
    j->whole[1] = xo_exact_rows(rc) >= 0;
    HS_TRY(too_big(j, choose_build(j, &right_read, err), err));
    if (j->spilling)
        return HS_OK;
    bool rev = j->rev;
    if (!rev && !right_read)
        HS_TRY(xo_rows_init(&j->right, &rc->schema, err));
    for (; !rev && !right_read;) {
        hs_batch *b;
        HS_TRY(xo_next(rc, &b, err));
        if (!b)
            break;
        if (build_should_spill(j, b))
            return spill_build(j, b, true, err);
        hs_status st = xo_rows_append(&j->right, op->ctx, op->name, b, err);
        hs_batch_free(b);
        HS_TRY(too_big(j, st, err));
        xo_op_held(op, j->right.bytes + j->pend_acc);
    }
    int64_t n = xo_rows_count(&j->right);
    /* the table's memory is reserved before it is made (an estimate,
     * corrected below); past the limit the join spills instead */
    int64_t est = n > 0 ? n * row_overhead(j, j->right.b) : 0;
    hs_status rs = xo_mem_reserve(op->ctx, est, op->name, err);
    if (rs == HS_NOMEM && can_spill(j))
        return spill_build(j, NULL, false, err);
    HS_TRY(too_big(j, rs, err));
    j->accounted = est;
    /* two integer keys (TPC-H partsupp's (partkey, suppkey)): packed into
     * one 64-bit value when every built value fits in int32 */
    if (j->n_keys == 2 && n > 0) {
        const hs_column *k0 = j->right.b->cols[j->rkeys[0]], *k1 = j->right.b->cols[j->rkeys[1]];
        bool ok = xo_is_int_type(k0->type) && xo_is_int_type(k1->type) &&
                  k0->type != HS_TYPE_UINT64 && k1->type != HS_TYPE_UINT64;
        const hs_field *ls = &op->children[j->rev ? 1 : 0]->schema;
        ok = ok && xo_is_int_type(ls->children[j->lkeys[0]].type) &&
             xo_is_int_type(ls->children[j->lkeys[1]].type) &&
             ls->children[j->lkeys[0]].type != HS_TYPE_UINT64 &&
             ls->children[j->lkeys[1]].type != HS_TYPE_UINT64;
        for (int64_t r = 0; ok && r < n; r++) {
            bool big;
            if (hs_col_is_valid(k0, r)) {
                int64_t v = xo_int_at(k0, r, &big);
                ok = v == (int32_t)v;
            }
            if (ok && hs_col_is_valid(k1, r)) {
                int64_t v = xo_int_at(k1, r, &big);
                ok = v == (int32_t)v;
            }
        }
        j->packed = ok;
    }
    j->nxt = hs_malloc((size_t)(n ? n : 1) * sizeof *j->nxt);
    j->rmatched = hs_calloc((size_t)(n ? n : 1), 1);
    if (!j->nxt || !j->rmatched)
        return hs_err_nomem(err, (size_t)n * 9);
    /* tails of the chains, so that chains keep input order */
    int64_t *tail = hs_malloc((size_t)(n ? n : 1) * sizeof *tail);
    if (!tail)
        return hs_err_nomem(err, (size_t)n * 8);
    hs_status st = HS_OK;
    if (j->int_key || j->packed) {
        st = build_int(j, n, tail, err);
        if (st != HS_OK) {
            hs_free(tail);
            return st;
        }
        n = 0;   /* chained */
    }
    for (int64_t r = 0; r < n && st == HS_OK; r++) {
        j->nxt[r] = -1;
        bool has_null;
        st = key_of(&j->main, j->right.b->cols, j->rkeys, r, &has_null);
        if (st != HS_OK)
            break;
        if (has_null) {
            j->right_has_null_key = true;
            continue;
        }
        uint64_t head;
        bool found;
        st = bucket_find(&j->main, j->right.b->cols, j->rkeys, r, true, &head, &found);
        if (st != HS_OK)
            break;
        if (found) {
            j->nxt[tail[head]] = r;
            tail[head] = r;
        } else {
            tail[r] = r;
        }
        if ((r & 1023) == 0 && xo_cancelled(op->ctx)) {
            hs_free(tail);
            return xo_check_cancel(op->ctx, err);
        }
    }
    hs_free(tail);
    if (st != HS_OK)
        return hs_err_nomem(err, 0);
    int64_t icap = 0;
    for (int p = 0; p < j->n_parts; p++)
        icap += (int64_t)j->parts[p].cap;
    n = xo_rows_count(&j->right);
    int64_t bytes = n * 9 + (int64_t)(j->buckets.cap * sizeof(hs_map_slot)) +
                    icap * (int64_t)sizeof(hs_imap_slot) +
                    (int64_t)j->main.kb.len * (int64_t)j->buckets.count;
    if (bytes > est)
        HS_TRY(too_big(j, xo_mem_reserve(op->ctx, bytes - est, op->name, err), err));
    else
        xo_mem_release(op->ctx, est - bytes);
    j->accounted = bytes;
    xo_op_held(op, j->right.bytes + j->accounted + j->pend_acc);
    return send_runtime_filters(j, err);
}

/* ---- output ---- */

/* A batch of schema from rows li of the current left batch and rows ri of
 * the right rows (-1 = NULL); with_right false: the left columns only.
 * move: li is every row of the probe batch in order and the batch is not
 * read again, so its columns move into the output instead of being taken. */
static hs_status pair_batch(probe *p, const hs_field *schema, const int64_t *li, const int64_t *ri,
                            int64_t n, bool with_right, bool move, hs_batch **out, hs_error *err)
{
    join_op *j = p->j;
    int nc = j->n_left + (with_right ? j->n_right : 0);
    *out = NULL;
    hs_column **cols = hs_calloc((size_t)(nc ? nc : 1), sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 0);
    hs_status st = HS_OK;
    for (int c = 0; c < nc && st == HS_OK; c++) {
        bool probe_side = j->rev ? c >= j->n_left : c < j->n_left;
        int pc = j->rev ? c - j->n_left : c;
        if (probe_side && move) {
            cols[c] = p->left->cols[pc];
            p->left->cols[pc] = NULL;
        } else if (j->rev) /* built rows are the left columns, the probe batch the right ones */
            st = c < j->n_left ? hs_col_take_nullable(j->right.b->cols[c], ri, n, &cols[c], err)
                               : hs_col_take_nullable(p->left->cols[c - j->n_left], li, n, &cols[c], err);
        else if (c < j->n_left)
            st = hs_col_take_nullable(p->left->cols[c], li, n, &cols[c], err);
        else
            st = hs_col_take_nullable(j->right.b->cols[c - j->n_left], ri, n, &cols[c], err);
    }
    if (st == HS_OK) {
        st = xo_batch_wrap(schema, nc, cols, n, out, err);   /* takes the columns */
    } else {
        for (int c = 0; c < nc; c++)
            hs_col_free(cols[c]);
    }
    hs_free(cols);
    return st;
}

/* last: the probe batch's final flush (nothing reads the batch after it
 * when there is no residual and every row matched: see pair_batch's move) */
static hs_status flush_pairs(probe *p, bool last, hs_error *err)
{
    join_op *j = p->j;
    int64_t n = (int64_t)HS_VEC_LEN(&p->pl, int64_t);
    if (n == 0)
        return HS_OK;
    int64_t *li = (int64_t *)p->pl.data, *ri = (int64_t *)p->pr.data;
    hs_status st = HS_OK;
    bool move = last && !j->residual && n == p->left->n_rows && li[0] == 0 && li[n - 1] == n - 1;
    for (int64_t k = 0; move && k < n; k++)   /* li is nondecreasing: identity? */
        move = li[k] == k;
    if (!j->residual) {
        bool mark_right = j->kind == XO_JOIN_RIGHT || j->kind == XO_JOIN_FULL || j->rev;
        for (int64_t k = 0; k < n; k++) {
            p->lmatched[li[k]] = 1;
            if (mark_right)
                __atomic_store_n(&j->rmatched[ri[k]], 1, __ATOMIC_RELAXED);
        }
        if (emits_pairs(j->kind) && (!j->rev || j->kind == XO_JOIN_INNER)) {
            hs_batch *b;
            st = pair_batch(p, &j->op.schema, li, ri, n, true, move, &b, err);
            if (st == HS_OK)
                st = xo_queue_push(&p->q, b, err);
        }
    } else {
        if (!p->sel && !(p->sel = hs_malloc(XO_BATCH_ROWS)))
            return hs_err_nomem(err, XO_BATCH_ROWS);
        hs_batch *b = NULL;
        st = pair_batch(p, &j->pair_schema, li, ri, n, true, false, &b, err);
        int64_t n_match = 0;
        if (st == HS_OK)
            st = ex_eval_filter(j->residual, b, NULL, p->sel, &n_match, err);
        if (st == HS_OK && n_match > 0) {
            int64_t k2 = 0;
            for (int64_t k = 0; k < n; k++)
                if (p->sel[k]) {
                    p->lmatched[li[k]] = 1;
                    if (j->kind == XO_JOIN_RIGHT || j->kind == XO_JOIN_FULL || j->rev)
                        __atomic_store_n(&j->rmatched[ri[k]], 1, __ATOMIC_RELAXED);
                    li[k2] = k;   /* reuse li as the selection (li[k] read above) */
                    k2++;
                }
            if (emits_pairs(j->kind) && (!j->rev || j->kind == XO_JOIN_INNER)) {
                hs_batch *o;
                st = xo_batch_take(&j->op.schema, b, li, k2, &o, err);
                if (st == HS_OK)
                    st = xo_queue_push(&p->q, o, err);
            }
        }
        hs_batch_free(b);
    }
    hs_buf_reset(&p->pl);
    hs_buf_reset(&p->pr);
    return st;
}

/* Full pairs are flushed before the next is added, so that a probe batch
 * whose rows each matched once reaches its final flush whole. */
static hs_status push_pair(probe *p, int64_t l, int64_t r, hs_error *err)
{
    if ((int64_t)HS_VEC_LEN(&p->pl, int64_t) >= XO_BATCH_ROWS)
        HS_TRY(flush_pairs(p, false, err));
    if (HS_VEC_PUSH(&p->pl, int64_t, l) != HS_OK || HS_VEC_PUSH(&p->pr, int64_t, r) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

/* Emits the left rows with lmatched == want (right columns NULL when wide). */
static hs_status emit_left(probe *p, uint8_t want, bool wide, hs_error *err)
{
    join_op *j = p->j;
    int64_t n = p->left->n_rows, k = 0;
    int64_t *li = hs_malloc((size_t)n * sizeof *li), *ri = hs_malloc((size_t)n * sizeof *ri);
    if (!li || !ri) {
        hs_free(li);
        hs_free(ri);
        return hs_err_nomem(err, 0);
    }
    for (int64_t i = 0; i < n; i++)
        if (p->lmatched[i] == want) {
            li[k] = i;
            ri[k++] = -1;
        }
    hs_status st = HS_OK;
    if (k > 0) {
        hs_batch *b;
        st = pair_batch(p, &j->op.schema, li, ri, k, wide, false, &b, err);
        if (st == HS_OK)
            st = xo_queue_push(&p->q, b, err);
    }
    hs_free(li);
    hs_free(ri);
    return st;
}

static hs_status probe_batch(probe *p, hs_error *err)
{
    join_op *j = p->j;
    hs_batch *b = p->left;
    int64_t n = b->n_rows;
    hs_free(p->lmatched);
    p->lmatched = hs_calloc((size_t)(n ? n : 1), 1);
    if (!p->lmatched)
        return hs_err_nomem(err, 0);
    int64_t n_right = xo_rows_count(&j->right);
    bool stop_at_first = !j->residual && !emits_pairs(j->kind) && !j->rev;
    if (j->rev && !j->residual && j->kind != XO_JOIN_INNER) {
        /* mark every built row of the bucket; a marked head means the
         * bucket was marked whole already */
        for (int64_t i = 0; i < n; i++) {
            bool has_null;
            HS_TRY(key_of(p, b->cols, j->lkeys, i, &has_null));
            uint64_t head;
            bool found = false;
            if (!has_null)
                HS_TRY(bucket_find(p, b->cols, j->lkeys, i, false, &head, &found));
            if (!found || __atomic_load_n(&j->rmatched[head], __ATOMIC_RELAXED))
                continue;
            for (int64_t r = (int64_t)head; r >= 0; r = j->nxt[r])
                __atomic_store_n(&j->rmatched[r], 1, __ATOMIC_RELAXED);
            if ((i & 1023) == 0)
                HS_TRY(xo_check_cancel(j->op.ctx, err));
        }
        return HS_OK;
    }
    if (j->kind == XO_JOIN_ANTI_NULL_AWARE) {
        /* x NOT IN (right keys) */
        for (int64_t i = 0; i < n; i++) {
            if (n_right == 0) {
                p->lmatched[i] = 0;
                continue;
            }
            bool has_null;
            HS_TRY(key_of(p, b->cols, j->lkeys, i, &has_null));
            uint64_t head;
            bool found = false;
            if (!has_null && !j->right_has_null_key)
                HS_TRY(bucket_find(p, b->cols, j->lkeys, i, false, &head, &found));
            if (has_null || j->right_has_null_key || found)
                p->lmatched[i] = 1;
        }
        return emit_left(p, 0, false, err);
    }
    /* integer keys: the batch's values first, so that the slot of row
     * i + J_PREFETCH loads while row i is looked up; runs of one value
     * (clustered probe input, TPC-H lineitem by l_orderkey) look it up once */
    bool ints = j->n_keys > 0 && (j->int_key || j->packed);
    if (ints && p->icap < n) {
        hs_free(p->ikeys);
        hs_free(p->iok);
        p->ikeys = hs_malloc((size_t)n * sizeof *p->ikeys);
        p->iok = hs_malloc((size_t)n);
        p->icap = p->ikeys && p->iok ? n : 0;
        if (!p->icap)
            return hs_err_nomem(err, (size_t)n * 9);
    }
    for (int64_t i = 0; ints && i < n; i++)
        p->iok[i] = int_key_at(j, b->cols, j->lkeys, i, &p->ikeys[i]);
    bool have_prev = false, prev_found = false;
    uint64_t prev_v = 0, prev_head = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r;
        if (j->n_keys == 0) {
            r = n_right > 0 ? 0 : -1;
        } else if (ints) {
            int64_t a = i + J_PREFETCH;
            if (a < n && p->iok[a] && p->ikeys[a] != p->ikeys[a - 1])
                imap_prefetch(part_of(j, p->ikeys[a]), p->ikeys[a]);
            if (!p->iok[i])
                continue;
            uint64_t v = p->ikeys[i];
            if (!have_prev || v != prev_v) {
                prev_found = hs_imap_get(part_of(j, v), v, &prev_head);
                prev_v = v;
                have_prev = true;
            }
            if (!prev_found)
                continue;
            r = (int64_t)prev_head;
        } else {
            bool has_null;
            HS_TRY(key_of(p, b->cols, j->lkeys, i, &has_null));
            uint64_t head;
            bool found = false;
            if (!has_null)
                HS_TRY(bucket_find(p, b->cols, j->lkeys, i, false, &head, &found));
            if (!found)
                continue;
            r = (int64_t)head;
        }
        for (; r >= 0; r = j->n_keys == 0 ? (r + 1 < n_right ? r + 1 : -1) : j->nxt[r]) {
            /* reversed: a built row matched once needs no other pair */
            if (j->rev && j->kind != XO_JOIN_INNER &&
                __atomic_load_n(&j->rmatched[r], __ATOMIC_RELAXED))
                continue;
            HS_TRY(push_pair(p, i, r, err));
            if (stop_at_first)
                break;
        }
        if ((i & 255) == 0)
            HS_TRY(xo_check_cancel(j->op.ctx, err));
    }
    HS_TRY(flush_pairs(p, true, err));
    if (j->rev)
        return HS_OK;
    switch (j->kind) {
    case XO_JOIN_LEFT: case XO_JOIN_FULL: return emit_left(p, 0, true, err);
    case XO_JOIN_SEMI: return emit_left(p, 1, false, err);
    case XO_JOIN_ANTI: return emit_left(p, 0, false, err);
    default: return HS_OK;
    }
}

static hs_status emit_right_tail(join_op *j, hs_error *err)
{
    int64_t n = xo_rows_count(&j->right);
    while (j->tail_pos < n && j->main.q.n - j->main.q.head == 0) {
        int64_t *li = hs_malloc(XO_BATCH_ROWS * sizeof *li), *ri = hs_malloc(XO_BATCH_ROWS * sizeof *ri);
        if (!li || !ri) {
            hs_free(li);
            hs_free(ri);
            return hs_err_nomem(err, 0);
        }
        int64_t k = 0;
        uint8_t want = j->rev && j->kind == XO_JOIN_SEMI ? 1 : 0;
        for (; j->tail_pos < n && k < XO_BATCH_ROWS; j->tail_pos++)
            if (j->rmatched[j->tail_pos] == want) {
                li[k] = -1;
                ri[k++] = j->tail_pos;
            }
        hs_status st = HS_OK;
        if (k > 0 && j->rev) {
            /* the built rows are the left rows, the output's only columns */
            hs_batch *b = NULL;
            st = xo_batch_take(&j->op.schema, j->right.b, ri, k, &b, err);
            if (st == HS_OK)
                st = xo_queue_push(&j->main.q, b, err);
        } else if (k > 0) {
            /* left columns all NULL: take from the left child's schema */
            hs_column **cols = hs_calloc((size_t)(j->n_left + j->n_right), sizeof *cols);
            int made = 0;
            st = cols ? HS_OK : hs_err_nomem(err, 0);
            for (; st == HS_OK && made < j->n_left; made++) {
                st = hs_col_create(&j->op.children[0]->schema.children[made], k, &cols[made], err);
                if (st == HS_OK && hs_col_append_nulls(cols[made], k) != HS_OK)
                    st = hs_err_nomem(err, 0);
            }
            for (; st == HS_OK && made < j->n_left + j->n_right; made++)
                st = hs_col_take_nullable(j->right.b->cols[made - j->n_left], ri, k, &cols[made], err);
            hs_batch *b = NULL;
            if (st == HS_OK) {
                st = xo_batch_wrap(&j->op.schema, j->n_left + j->n_right, cols, k, &b, err);
                if (st == HS_OK)
                    st = xo_queue_push(&j->main.q, b, err);
            } else if (cols) {
                for (int i = 0; i < j->n_left + j->n_right; i++)
                    hs_col_free(cols[i]);
            }
            hs_free(cols);
        }
        hs_free(li);
        hs_free(ri);
        HS_TRY(st);
    }
    return HS_OK;
}

/* Parallel probing: probes only read the built table (RIGHT/FULL also set
 * bytes of rmatched to 1, with relaxed atomic stores, read after every
 * probe has finished), so with ctx->pool and ctx->threads > 1 up to
 * `threads` left batches are probed at once, each by its own probe state,
 * and their outputs queued in input order. */
/* The next batch to probe with: the left batches read ahead first, then
 * the probing child (the right one when reversed). */
static hs_status next_probe_batch(join_op *j, hs_batch **out, hs_error *err)
{
    if (j->pend_head < j->n_pend) {
        *out = j->pend[j->pend_head];
        j->pend[j->pend_head++] = NULL;
        pend_account(j, -xo_batch_bytes(*out));
        return HS_OK;
    }
    return xo_next(j->op.children[j->rev ? 1 : 0], out, err);
}

static bool has_tail(const join_op *j)
{
    return j->kind == XO_JOIN_RIGHT || j->kind == XO_JOIN_FULL ||
           (j->rev && j->kind != XO_JOIN_INNER);
}

static bool can_parallel(const join_op *j)
{
    const xo_ctx *ctx = j->op.ctx;
    return ctx && ctx->pool && ctx->threads > 1;
}

/* p->left, then p->more[] in order (consumed as probed). */
static hs_status probe_task(void *arg, hs_error *err)
{
    probe *p = arg;
    HS_TRY(probe_batch(p, err));
    for (int i = 0; i < p->n_more; i++) {
        hs_batch_free(p->left);
        p->left = p->more[i];
        p->more[i] = NULL;
        HS_TRY(probe_batch(p, err));
    }
    p->n_more = 0;
    return HS_OK;
}

/* Reads up to `threads` left batches and probes them; false at the end. */
static hs_status probe_parallel(join_op *j, bool *more, hs_error *err)
{
    xo_ctx *ctx = j->op.ctx;
    int k = ctx->threads;
    if (!j->par) {
        j->par = hs_calloc((size_t)k, sizeof *j->par);
        if (!j->par)
            return hs_err_nomem(err, 0);
        j->n_par = k;
        for (int i = 0; i < k; i++)
            j->par[i].j = j;
    }
    int nb = 0, max = k * JOIN_ROUND_BATCHES;
    if (!j->par_in && !(j->par_in = hs_calloc((size_t)max, sizeof *j->par_in)))
        return hs_err_nomem(err, 0);
    hs_batch **in = j->par_in;
    int64_t rows = 0;
    *more = true;
    while (nb < k || (nb < max && rows < (int64_t)k * JOIN_ROUND_ROWS)) {
        hs_batch *b;
        hs_status st = next_probe_batch(j, &b, err);
        if (st != HS_OK) {
            for (int i = 0; i < nb; i++)
                hs_batch_free(in[i]);
            return st;
        }
        if (!b) {
            *more = false;
            break;
        }
        in[nb++] = b;
        rows += b->n_rows;
    }
    /* state i probes the consecutive batches [i*nb/n, (i+1)*nb/n) */
    int n = nb < k ? nb : k;
    for (int i = 0; i < n; i++) {
        int a = (int)((int64_t)i * nb / n), e = (int)((int64_t)(i + 1) * nb / n);
        probe *p = &j->par[i];
        hs_batch_free(p->left);
        p->left = in[a];
        p->n_more = 0;
        for (int m = a + 1; m < e; m++)
            p->more[p->n_more++] = in[m];
    }
    if (n == 1) {
        HS_TRY(probe_task(&j->par[0], err));
    } else if (n > 1) {
        hs_group *g;
        HS_TRY(hs_group_create(ctx->pool, &g, err));
        hs_status sub = HS_OK;
        for (int i = 0; i < n && sub == HS_OK; i++)
            sub = hs_group_submit(g, probe_task, &j->par[i]);
        hs_status st = hs_group_wait(g, err);
        hs_group_destroy(g);
        HS_TRY(st);
        if (sub != HS_OK)
            return hs_err_nomem(err, 0);
    }
    for (int i = 0; i < n; i++) {
        hs_batch *b;
        while ((b = xo_queue_pop(&j->par[i].q)))
            HS_TRY(xo_queue_push(&j->main.q, b, err));
        hs_batch_free(j->par[i].left);
        j->par[i].left = NULL;
    }
    return HS_OK;
}

static hs_status join_next(xo_op *op, hs_batch **out, hs_error *err)
{
    join_op *j = (join_op *)op;
    for (;;) {
        *out = xo_queue_pop(&j->main.q);
        if (*out)
            return HS_OK;
        switch (j->state) {
        case J_BUILD:
            HS_TRY(join_build(j, err));
            j->state = j->spilling ? J_SPILL_PROBE : J_PROBE;
            break;
        case J_SPILL_PROBE:
            HS_TRY(spill_probe(j, err));
            j->state = J_SPILL_PARTS;
            break;
        case J_SPILL_PARTS:
            return next_spilled(j, out, err);
        case J_PROBE: {
            if (can_parallel(j)) {
                bool more = false;
                HS_TRY(probe_parallel(j, &more, err));
                if (!more)
                    j->state = has_tail(j) ? J_TAIL : J_DONE;
                break;
            }
            hs_batch_free(j->main.left);
            j->main.left = NULL;
            hs_batch *b;
            HS_TRY(next_probe_batch(j, &b, err));
            if (!b) {
                j->state = has_tail(j) ? J_TAIL : J_DONE;
                break;
            }
            j->main.left = b;
            HS_TRY(probe_batch(&j->main, err));
            break;
        }
        case J_TAIL:
            HS_TRY(emit_right_tail(j, err));
            if (j->main.q.n - j->main.q.head == 0)
                j->state = J_DONE;
            break;
        default:
            return HS_OK;
        }
    }
}

static void join_destroy(xo_op *op)
{
    join_op *j = (join_op *)op;
    xo_free(j->sub);
    xo_spill_parts_free(&j->sl);
    xo_spill_parts_free(&j->sr);
    hs_free(j->lkeys);
    hs_free(j->rkeys);
    if (!j->borrowed_residual)
        ex_free(j->residual);
    hs_field_clear(&j->pair_schema);
    xo_rows_free(&j->right, op->ctx);
    hs_map_free(&j->buckets);
    for (int p = 0; p < J_MAX_PARTS; p++)
        hs_imap_free(&j->parts[p]);
    hs_free(j->nxt);
    hs_free(j->rmatched);
    probe_clear(&j->main);
    for (int i = 0; i < j->n_par; i++)
        probe_clear(&j->par[i]);
    hs_free(j->par);
    hs_free(j->par_in);
    for (int i = 0; i < j->n_pend; i++)
        hs_batch_free(j->pend[i]);
    hs_free(j->pend);
    xo_mem_release(op->ctx, j->accounted + j->pend_acc);
}

static hs_status append_fields(hs_field *dst, const hs_field *src, bool make_nullable,
                               hs_error *err)
{
    for (int i = 0; i < src->n_children; i++) {
        hs_field f;
        if (hs_field_copy(&src->children[i], &f) != HS_OK)
            return hs_err_nomem(err, 0);
        if (make_nullable)
            f.nullable = true;
        if (hs_field_add_child(dst, &f) != HS_OK) {
            hs_field_clear(&f);
            return hs_err_nomem(err, 0);
        }
    }
    return HS_OK;
}

hs_status xo_schema_concat(const hs_field *left, const hs_field *right, hs_field *out,
                           hs_error *err)
{
    hs_field_init(out, "", HS_TYPE_STRUCT, false);
    hs_status st = append_fields(out, left, false, err);
    if (st == HS_OK)
        st = append_fields(out, right, false, err);
    if (st != HS_OK) {
        hs_field_clear(out);
        return st;
    }
    xo_schema_renumber(out);
    return HS_OK;
}

static hs_status join_setup(join_op *j, const int *lkeys, const int *rkeys, hs_buf *d,
                            hs_error *err)
{
    const hs_field *ls = &j->op.children[0]->schema, *rs = &j->op.children[1]->schema;
    j->n_left = ls->n_children;
    j->n_right = rs->n_children;
    if (j->kind == XO_JOIN_ANTI_NULL_AWARE && (j->n_keys != 1 || j->residual))
        return hs_err_set(err, HS_UNSUPPORTED,
                          "%s: a null-aware anti join takes exactly one key and no residual",
                          j->op.name);
    j->lkeys = hs_calloc((size_t)(j->n_keys ? j->n_keys : 1), sizeof(int));
    j->rkeys = hs_calloc((size_t)(j->n_keys ? j->n_keys : 1), sizeof(int));
    if (!j->lkeys || !j->rkeys)
        return hs_err_nomem(err, 0);
    for (int k = 0; k < j->n_keys; k++) {
        if (lkeys[k] < 0 || lkeys[k] >= j->n_left || rkeys[k] < 0 || rkeys[k] >= j->n_right)
            return hs_err_set(err, HS_INVALID, "%s: key %d (#%d = #%d) out of range", j->op.name, k,
                              lkeys[k] + 1, rkeys[k] + 1);
        const hs_field *lf = &ls->children[lkeys[k]], *rf = &rs->children[rkeys[k]];
        bool li = xo_is_int_type(lf->type), ri = xo_is_int_type(rf->type);
        bool same = (li && ri) ? ((lf->type == HS_TYPE_DATE32) == (rf->type == HS_TYPE_DATE32))
                               : hs_field_equals(lf, rf, false, false) ||
                                     (lf->type == rf->type && lf->type != HS_TYPE_DECIMAL128 &&
                                      lf->type != HS_TYPE_TIMESTAMP && lf->n_children == 0);
        if (lf->type == HS_TYPE_DECIMAL128 && rf->type == HS_TYPE_DECIMAL128)
            same = lf->scale == rf->scale;
        if (lf->type == HS_TYPE_TIMESTAMP && rf->type == HS_TYPE_TIMESTAMP)
            same = lf->unit == rf->unit;
        if ((lf->type == HS_TYPE_FLOAT32 || lf->type == HS_TYPE_FLOAT64 || lf->type == HS_TYPE_FLOAT16) &&
            (rf->type == HS_TYPE_FLOAT32 || rf->type == HS_TYPE_FLOAT64 || rf->type == HS_TYPE_FLOAT16))
            same = true;
        if (!same)
            return hs_err_set(err, HS_INVALID, "%s: key %d compares %s with %s (cast one side first)",
                              j->op.name, k, hs_type_name(lf->type), hs_type_name(rf->type));
        j->lkeys[k] = lkeys[k];
        j->rkeys[k] = rkeys[k];
        if (hs_buf_printf(d, "%s#%d = #%d", k ? ", " : "keys: ", lkeys[k] + 1,
                          j->n_left + rkeys[k] + 1) != HS_OK)
            return hs_err_nomem(err, 0);
    }
    /* (uint64 is left out: its values above INT64_MAX share bits with negatives) */
    j->n_parts = 1;
    j->int_key = j->n_keys == 1 && xo_is_int_type(ls->children[lkeys[0]].type) &&
                 xo_is_int_type(rs->children[rkeys[0]].type) &&
                 ls->children[lkeys[0]].type != HS_TYPE_UINT64 &&
                 rs->children[rkeys[0]].type != HS_TYPE_UINT64;
    HS_TRY(xo_schema_concat(ls, rs, &j->pair_schema, err));
    bool left_null = j->kind == XO_JOIN_RIGHT || j->kind == XO_JOIN_FULL;
    bool right_null = j->kind == XO_JOIN_LEFT || j->kind == XO_JOIN_FULL;
    HS_TRY(append_fields(&j->op.schema, ls, left_null, err));
    if (emits_pairs(j->kind))
        HS_TRY(append_fields(&j->op.schema, rs, right_null, err));
    xo_schema_renumber(&j->op.schema);
    if (j->residual) {
        char *txt = NULL;
        HS_TRY(ex_format(j->residual, &txt, err));
        hs_status st = hs_buf_printf(d, "%s%s: %s", d->len ? "; " : "",
                                     j->n_keys ? "residual" : "condition", txt);
        hs_free(txt);
        if (st != HS_OK)
            return hs_err_nomem(err, 0);
    }
    char kb[64];
    snprintf(kb, sizeof kb, "%s%s", d->len ? "; " : "", kind_name(j->kind));
    if (hs_buf_puts(d, kb) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

const hs_field *xo_join_input_schema(const xo_op *op)
{
    return &((const join_op *)op)->pair_schema;
}

hs_status xo_join_set_residual(xo_op *op, ex_expr *residual, hs_error *err)
{
    join_op *j = (join_op *)op;
    if (j->state != J_BUILD) {
        ex_free(residual);
        return hs_err_set(err, HS_INVALID, "%s: the residual is set before the first batch", op->name);
    }
    if (j->kind == XO_JOIN_ANTI_NULL_AWARE && residual && !ex_is_true(residual)) {
        ex_free(residual);
        return hs_err_set(err, HS_UNSUPPORTED, "%s: a null-aware anti join takes no residual",
                          op->name);
    }
    char *txt = NULL;
    hs_status st = residual ? ex_format(residual, &txt, err) : HS_OK;
    if (st != HS_OK) {
        ex_free(residual);
        return st;
    }
    hs_buf d = {0};
    if (hs_buf_printf(&d, "%s%s%s: %s", op->detail ? op->detail : "", op->detail ? "; " : "",
                      j->n_keys ? "residual" : "condition", txt ? txt : "true") != HS_OK) {
        hs_free(txt);
        ex_free(residual);
        return hs_err_nomem(err, 0);
    }
    hs_free(txt);
    hs_free(op->detail);
    op->detail = (char *)hs_buf_detach(&d, NULL);
    ex_free(j->residual);
    j->residual = residual && !ex_is_true(residual) ? residual : NULL;
    if (residual && !j->residual)
        ex_free(residual);
    return HS_OK;
}

static hs_status join_make(const char *name, xo_op *left, xo_op *right, xo_join_kind kind,
                           int n_keys, const int *lkeys, const int *rkeys, ex_expr *residual,
                           xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *kids[2] = {left, right}, *op;
    hs_status st = xo_op_alloc(sizeof(join_op), left->ctx, name, 2, kids, &op, err);
    if (st != HS_OK) {
        ex_free(residual);
        return st;
    }
    join_op *j = (join_op *)op;
    op->next = join_next;
    op->destroy = join_destroy;
    op->explain_extra = join_extra;
    op->push_keyfilter = join_push_keyfilter;
    op->max_rows = join_max_rows;
    j->main.j = j;
    j->kind = kind;
    j->n_keys = n_keys < 0 ? 0 : n_keys;
    j->residual = residual && !ex_is_true(residual) ? residual : NULL;
    if (residual && !j->residual)
        ex_free(residual);
    hs_buf d = {0};
    st = (unsigned)kind > XO_JOIN_ANTI_NULL_AWARE
             ? hs_err_set(err, HS_INVALID, "%s: unknown join kind %d", name, (int)kind)
             : join_setup(j, lkeys, rkeys, &d, err);
    if (st != HS_OK) {
        hs_buf_free(&d);
        xo_free(op);
        return st;
    }
    op->detail = (char *)hs_buf_detach(&d, NULL);
    *out = op;
    return HS_OK;
}

hs_status xo_hashjoin(xo_op *left, xo_op *right, xo_join_kind kind, int n_keys, const int *lkeys,
                      const int *rkeys, ex_expr *residual, xo_op **out, hs_error *err)
{
    return join_make(n_keys > 0 ? "HashJoin" : "NestedLoopJoin", left, right, kind, n_keys, lkeys,
                     rkeys, residual, out, err);
}

hs_status xo_nljoin(xo_op *left, xo_op *right, xo_join_kind kind, ex_expr *cond, xo_op **out,
                    hs_error *err)
{
    if (kind == XO_JOIN_ANTI_NULL_AWARE) {
        xo_free(left);
        xo_free(right);
        ex_free(cond);
        return hs_err_set(err, HS_UNSUPPORTED, "NestedLoopJoin: null-aware anti join needs a key");
    }
    return join_make("NestedLoopJoin", left, right, kind, 0, NULL, NULL, cond, out, err);
}
