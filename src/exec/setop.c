/*
 * exec/setop.c - UNION [ALL], INTERSECT [ALL], EXCEPT [ALL] with
 * PostgreSQL's semantics (rows compare as row keys, so NULLs are equal).
 *
 *   UNION ALL       left's batches, then right's (relabelled); with a fill
 *                   count n (xo_union_fill) the right child is read only
 *                   when the left one gave fewer than n rows
 *   UNION           both, a row emitted the first time its key is seen
 *   INTERSECT [ALL], EXCEPT [ALL]
 *                   the right child is read first into a map key -> count;
 *                   left rows then stream:
 *                     INTERSECT      count > 0: emit, count = 0
 *                     INTERSECT ALL  count > 0: emit, count - 1
 *                     EXCEPT         not in right and first time seen: emit
 *                     EXCEPT ALL     count > 0: count - 1; else emit
 * Output order: left rows in input order (then right rows for UNION).
 * The output schema is the left child's, a column nullable when either
 * side's is.
 *
 * Spilling.  Under a memory limit, when a batch could take the maps past
 * it (all its keys new, the maps doubling), the operator stops adding
 * keys: a row whose key is in memory is handled as above, and any other
 * row goes to one of XO_SPILL_PARTS partitions of its side (spill.c) by a
 * hash of its key.  So every key lives either in memory or in one pair of
 * partitions, and at the end each pair is handled by a set operation of
 * its own over readers of its rows (one level deeper, up to
 * XO_SPILL_MAX_LEVEL).  A left row of a key not in memory is dropped
 * (INTERSECT) or kept (EXCEPT) at once when the right rows all fit.
 * Spilled rows come out after the rest, by partition.
 */
#include "exec/exec_int.h"
#include "base/hash.h"
#include "base/hashmap.h"

#include <stdio.h>

typedef struct setop_op {
    xo_op op;
    xo_setop_kind kind;
    bool all;
    bool built;
    int side;           /* child being streamed */
    int64_t fill;       /* xo_union_fill: the right child only below this many rows */
    int64_t left_rows;  /* rows the left child gave */
    hs_map right;       /* key -> count (INTERSECT / EXCEPT) */
    hs_map seen;        /* keys already emitted (UNION, INTERSECT, EXCEPT) */
    int64_t key_bytes, accounted;
    hs_buf kb;
    /* spilling (see the top) */
    int level;
    bool spilling;          /* no more keys in memory */
    bool right_spilled;     /* some right rows are in partitions */
    xo_spill_parts parts[2];/* left, right rows by partition */
    int next_part;
    xo_op *sub;
    int64_t sub_spilled;
} setop_op;

static hs_status row_key(setop_op *s, const hs_batch *b, int64_t i)
{
    hs_buf_reset(&s->kb);
    for (int c = 0; c < b->n_cols; c++)
        HS_TRY(xo_key_append(&s->kb, b->cols[c], i));
    return HS_OK;
}

static hs_status setop_account(setop_op *s, hs_error *err)
{
    int64_t bytes = (int64_t)((s->right.cap + s->seen.cap) * sizeof(hs_map_slot)) + s->key_bytes;
    if (bytes > s->accounted) {
        hs_status st = xo_mem_reserve(s->op.ctx, bytes - s->accounted, s->op.name, err);
        if (st == HS_NOMEM && s->level >= XO_SPILL_MAX_LEVEL) {
            hs_err_clear(err);
            return hs_err_set(err, HS_NOMEM,
                              "%s: out of memory: a partition does not fit in the memory limit of "
                              "%lld bytes after %d levels of spilling", s->op.name,
                              (long long)s->op.ctx->mem_limit, s->level);
        }
        HS_TRY(st);
        s->accounted = bytes;
        xo_op_held(&s->op, bytes);
    }
    return HS_OK;
}

/* True when b's rows, all new keys, could take the maps past the limit
 * (the maps doubling as they grow). */
static bool setop_should_spill(const setop_op *s, const hs_batch *b)
{
    const xo_ctx *ctx = s->op.ctx;
    if (s->spilling || !ctx || ctx->mem_limit <= 0 || s->level >= XO_SPILL_MAX_LEVEL ||
        b->n_rows == 0)
        return false;
    int64_t slot = (int64_t)sizeof(hs_map_slot);
    int64_t grow = (int64_t)(s->right.cap + s->seen.cap) * slot;
    int64_t need = grow + b->n_rows * (3 * slot + 2 * b->n_cols) + xo_batch_bytes(b);
    return xo_mem_used(ctx) + need > ctx->mem_limit;
}

/* Partition of the key in s->kb. */
static uint8_t part_of_key(const setop_op *s)
{
    return (uint8_t)(hs_xxh64(s->kb.data, s->kb.len, xo_spill_seed(s->level)) % XO_SPILL_PARTS);
}

static hs_status build_right(setop_op *s, hs_error *err)
{
    xo_op *rc = s->op.children[1];
    for (;;) {
        hs_batch *b;
        HS_TRY(xo_next(rc, &b, err));
        if (!b)
            return HS_OK;
        if (setop_should_spill(s, b))
            s->spilling = true;
        uint8_t *part = s->spilling ? hs_malloc((size_t)b->n_rows) : NULL;
        hs_status st = s->spilling && !part ? HS_NOMEM : HS_OK;
        for (int64_t i = 0; i < b->n_rows && st == HS_OK; i++) {
            st = row_key(s, b, i);
            uint64_t cnt = 0;
            bool found = false;
            if (st == HS_OK)
                found = hs_map_get(&s->right, s->kb.data, s->kb.len, &cnt);
            if (part)
                part[i] = found ? UINT8_MAX : part_of_key(s);
            if (st == HS_OK && (found || !part))
                st = hs_map_put(&s->right, s->kb.data, s->kb.len, cnt + 1);
            if (st == HS_OK && !found && !part)
                s->key_bytes += (int64_t)s->kb.len;
        }
        if (st != HS_OK)
            st = hs_err_nomem(err, 0);
        if (st == HS_OK && part) {
            int64_t before = s->parts[1].total;
            st = xo_spill_parts_write(s->op.ctx, &s->parts[1], b, part, err);
            s->right_spilled |= s->parts[1].total > before;
        }
        hs_free(part);
        hs_batch_free(b);
        HS_TRY(st);
        HS_TRY(setop_account(s, err));
    }
}

/* A key not in the seen map: remembered and emitted, or (spilling) sent
 * to its partition. */
static hs_status first_seen(setop_op *s, bool *keep, uint8_t *part)
{
    uint64_t v;
    bool found;
    if (s->spilling) {
        if (!hs_map_get(&s->seen, s->kb.data, s->kb.len, &v))
            *part = part_of_key(s);
        return HS_OK;
    }
    HS_TRY(hs_map_get_or_put(&s->seen, s->kb.data, s->kb.len, 0, &v, &found));
    if (!found)
        s->key_bytes += (int64_t)s->kb.len;
    *keep = !found;
    return HS_OK;
}

/* Decides for row i of b whether it is emitted (*keep) or spilled to
 * partition *part (UINT8_MAX: not). */
static hs_status keep_row(setop_op *s, const hs_batch *b, int64_t i, bool *keep, uint8_t *part)
{
    HS_TRY(row_key(s, b, i));
    uint64_t cnt = 0;
    bool found;
    *keep = false;
    *part = UINT8_MAX;
    switch (s->kind) {
    case XO_SET_UNION:
        return first_seen(s, keep, part);
    case XO_SET_INTERSECT:
        if (hs_map_get(&s->right, s->kb.data, s->kb.len, &cnt)) {
            if (cnt == 0)
                return HS_OK;
            *keep = true;
            return hs_map_put(&s->right, s->kb.data, s->kb.len, s->all ? cnt - 1 : 0);
        }
        if (s->right_spilled)
            *part = part_of_key(s);
        return HS_OK;
    case XO_SET_EXCEPT:
        found = hs_map_get(&s->right, s->kb.data, s->kb.len, &cnt);
        if (!found && s->right_spilled) {
            *part = part_of_key(s);
            return HS_OK;
        }
        if (s->all) {
            if (found && cnt > 0)
                return hs_map_put(&s->right, s->kb.data, s->kb.len, cnt - 1);
            *keep = true;
            return HS_OK;
        }
        if (found)
            return HS_OK;
        return first_seen(s, keep, part);
    }
    return HS_OK;
}

static hs_status xo_setop_level(xo_setop_kind kind, bool all, xo_op *left, xo_op *right, int level,
                         xo_op **out, hs_error *err);

/* After the streamed rows: each pair of partitions by a set operation of
 * its own. */
static hs_status next_spilled(setop_op *s, hs_batch **out, hs_error *err)
{
    xo_op *op = &s->op;
    for (;;) {
        if (s->sub) {
            HS_TRY(xo_next(s->sub, out, err));
            xo_op_held(op, s->sub->mem_peak);
            if (*out)
                return xo_batch_set_schema(*out, &op->schema, err);
            setop_op *ss = (setop_op *)s->sub;
            s->sub_spilled += ss->parts[0].total + ss->parts[1].total + ss->sub_spilled;
            xo_free(s->sub);
            s->sub = NULL;
        }
        if (s->next_part >= XO_SPILL_PARTS) {
            xo_spill_parts_free(&s->parts[0]);
            xo_spill_parts_free(&s->parts[1]);
            return HS_OK;
        }
        int p = s->next_part++;
        bool hl = s->parts[0].rows[p] > 0, hr = s->parts[1].rows[p] > 0;
        if (!(s->kind == XO_SET_UNION ? hl || hr : s->kind == XO_SET_INTERSECT ? hl && hr : hl))
            continue;
        xo_op *rl, *rr;
        HS_TRY(xo_spill_reader(op->ctx, &s->parts[0].sp, &op->children[0]->schema,
                               &s->parts[0].offs[p], &rl, err));
        hs_status st = xo_spill_reader(op->ctx, &s->parts[1].sp, &op->children[1]->schema,
                                       &s->parts[1].offs[p], &rr, err);
        if (st != HS_OK) {
            xo_free(rl);
            return st;
        }
        HS_TRY(xo_setop_level(s->kind, s->all, rl, rr, s->level + 1, &s->sub, err));
    }
}

static hs_status setop_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const setop_op *s = (const setop_op *)op;
    if (!s->parts[0].total && !s->parts[1].total)
        return HS_OK;
    if (hs_buf_printf(out, "spilled: %lld left rows and %lld right rows to %d partitions "
                      "(%lld bytes), %lld rows again in deeper levels",
                      (long long)s->parts[0].total, (long long)s->parts[1].total, XO_SPILL_PARTS,
                      (long long)(s->parts[0].sp.written + s->parts[1].sp.written),
                      (long long)s->sub_spilled) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

static hs_status setop_next(xo_op *op, hs_batch **out, hs_error *err)
{
    setop_op *s = (setop_op *)op;
    if (!s->built) {
        if (s->kind != XO_SET_UNION)
            HS_TRY(build_right(s, err));
        s->built = true;
    }
    for (;;) {
        int last = s->kind == XO_SET_UNION ? 1 : 0;
        if (s->side > last)
            return s->parts[0].total || s->parts[1].total ? next_spilled(s, out, err) : HS_OK;
        if (s->side == 1 && s->fill > 0 && s->left_rows >= s->fill)
            return HS_OK;
        hs_batch *b;
        HS_TRY(xo_next(op->children[s->side], &b, err));
        if (!b) {
            s->side++;
            continue;
        }
        if (s->side == 0)
            s->left_rows += b->n_rows;
        if (s->kind == XO_SET_UNION && s->all) {
            hs_status st = xo_batch_set_schema(b, &op->schema, err);
            if (st != HS_OK) {
                hs_batch_free(b);
                return st;
            }
            *out = b;
            return HS_OK;
        }
        hs_buf keep = {0};
        /* keys are added to the seen map by UNION and EXCEPT */
        if ((s->kind == XO_SET_UNION || (s->kind == XO_SET_EXCEPT && !s->all)) &&
            setop_should_spill(s, b))
            s->spilling = true;
        uint8_t *part = hs_malloc((size_t)(b->n_rows ? b->n_rows : 1));
        hs_status st = part ? HS_OK : HS_NOMEM;
        bool any_part = false;
        for (int64_t i = 0; i < b->n_rows && st == HS_OK; i++) {
            bool k;
            st = keep_row(s, b, i, &k, &part[i]);
            any_part |= part[i] != UINT8_MAX;
            if (st == HS_OK && k)
                st = HS_VEC_PUSH(&keep, int64_t, i);
        }
        if (st != HS_OK)
            st = hs_err_nomem(err, 0);
        if (st == HS_OK && any_part)
            st = xo_spill_parts_write(op->ctx, &s->parts[s->side], b, part, err);
        hs_free(part);
        if (st == HS_OK)
            st = setop_account(s, err);
        int64_t nk = (int64_t)HS_VEC_LEN(&keep, int64_t);
        if (st == HS_OK && nk > 0)
            st = xo_batch_take(&op->schema, b, (int64_t *)keep.data, nk, out, err);
        hs_buf_free(&keep);
        hs_batch_free(b);
        HS_TRY(st);
        if (*out)
            return HS_OK;
    }
}

static void setop_destroy(xo_op *op)
{
    setop_op *s = (setop_op *)op;
    xo_free(s->sub);
    xo_spill_parts_free(&s->parts[0]);
    xo_spill_parts_free(&s->parts[1]);
    hs_map_free(&s->right);
    hs_map_free(&s->seen);
    hs_buf_free(&s->kb);
    xo_mem_release(op->ctx, s->accounted);
}

static bool types_match(const hs_field *a, const hs_field *b)
{
    if (a->type != b->type || a->n_children != b->n_children)
        return false;
    switch (a->type) {
    case HS_TYPE_DECIMAL128: if (a->scale != b->scale) return false; break;
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP:
        if (a->unit != b->unit) return false;
        break;
    case HS_TYPE_FIXED_BINARY: case HS_TYPE_FIXED_LIST: if (a->width != b->width) return false; break;
    default: break;
    }
    for (int i = 0; i < a->n_children; i++)
        if (!types_match(&a->children[i], &b->children[i]))
            return false;
    return true;
}

hs_status xo_setop(xo_setop_kind kind, bool all, xo_op *left, xo_op *right, xo_op **out,
                   hs_error *err)
{
    return xo_setop_level(kind, all, left, right, 0, out, err);
}

/* xo_setop of one partition, `level` deep (see the top). */
static hs_status xo_setop_level(xo_setop_kind kind, bool all, xo_op *left, xo_op *right, int level,
                         xo_op **out, hs_error *err)
{
    *out = NULL;
    static const char *names[] = {"Union", "Intersect", "Except"};
    xo_op *kids[2] = {left, right}, *op;
    if ((unsigned)kind > XO_SET_EXCEPT) {
        xo_free(left);
        xo_free(right);
        return hs_err_set(err, HS_INVALID, "SetOp: unknown kind %d", (int)kind);
    }
    HS_TRY(xo_op_alloc(sizeof(setop_op), left->ctx, names[kind], 2, kids, &op, err));
    setop_op *s = (setop_op *)op;
    s->kind = kind;
    s->all = all;
    s->level = level;
    op->next = setop_next;
    op->destroy = setop_destroy;
    op->explain_extra = setop_extra;
    const hs_field *ls = &left->schema, *rs = &right->schema;
    if (ls->n_children != rs->n_children) {
        hs_status st = hs_err_set(err, HS_INVALID, "each %s query must have the same number of columns (%d vs %d)",
                                  kind == XO_SET_UNION ? "UNION" : kind == XO_SET_INTERSECT ? "INTERSECT" : "EXCEPT",
                                  ls->n_children, rs->n_children);
        xo_free(op);
        return st;
    }
    for (int i = 0; i < ls->n_children; i++)
        if (!types_match(&ls->children[i], &rs->children[i])) {
            hs_status st = hs_err_set(err, HS_INVALID, "%s: column %d types %s and %s cannot be matched",
                                      names[kind], i + 1, hs_type_name(ls->children[i].type),
                                      hs_type_name(rs->children[i].type));
            xo_free(op);
            return st;
        }
    hs_field_clear(&op->schema);
    if (hs_field_copy(ls, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    for (int i = 0; i < ls->n_children; i++)
        op->schema.children[i].nullable = ls->children[i].nullable || rs->children[i].nullable;
    if (!(op->detail = hs_strdup(all ? "ALL" : "DISTINCT"))) {
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    *out = op;
    return HS_OK;
}

hs_status xo_union_fill(xo_op *left, xo_op *right, int64_t n, xo_op **out, hs_error *err)
{
    HS_TRY(xo_setop(XO_SET_UNION, true, left, right, out, err));
    setop_op *s = (setop_op *)*out;
    s->fill = n;
    char buf[96];
    snprintf(buf, sizeof buf, "ALL; second input read only when the first gives < %lld rows",
             (long long)n);
    char *d = hs_strdup(buf);
    if (!d) {
        xo_free(*out);
        *out = NULL;
        return hs_err_nomem(err, 0);
    }
    hs_free((*out)->detail);
    (*out)->detail = d;
    return HS_OK;
}
