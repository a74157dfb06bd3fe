/*
 * exec/agg.c - HashAggregate (Distinct is exec/distinct.c).
 *
 * HashAggregate.  Groups are numbered 0, 1, ... in order of first
 * appearance.  Per input batch:
 *   1. group ids: the key columns of each row are encoded as a row key
 *      (exec_int.h) and looked up in an hs_map (key -> group id); rows that
 *      open a new group are taken into `keys` (an xo_rows of the group
 *      columns), so row g of `keys` holds group g's key values.  Without
 *      group columns every row is group 0, which exists from the start (so
 *      a global aggregate returns one row even on empty input).
 *   2. each aggregate updates per-group state arrays indexed by group id:
 *        count(*), count      cnt
 *        sum, avg             cnt + isum (__int128: integers, decimals) or fsum
 *        bool_and, bool_or    cnt + flag
 *        sum, avg of vector   pv: pgvector's accumulators (expr/pgvector.h),
 *        or halfvec           results vector/halfvec as pgvector's
 *        min, max             best: the row of `store` holding the best value
 *                             so far (one candidate per group per batch is
 *                             appended, after a per-batch pre-selection)
 *        string_agg,          values appended to `store` (with the separator
 *        array_agg            column when it is not constant), chained per
 *                             group in input order: head/tail per group, nxt
 *                             per stored value
 *      DISTINCT filters rows through a second map keyed by (group id,
 *      value key) first (an integer within int32 and a group id below
 *      2^32: both packed in one 64-bit key of an hs_imap).
 * string_agg/array_agg with ORDER BY also store their order columns and
 * re-chain every group's values in key order at the end (one stable sort
 * of all stored values by (group, keys)).
 * At the end of input the key columns and one column per aggregate are
 * built for all groups and emitted in slices of XO_BATCH_ROWS.
 * One integer-like group column (ints, dates, times, timestamps) is looked
 * up by value in an hs_imap instead (NULL is a group kept aside).
 * At most AGG_SMALL groups: each batch's rows are also ordered by group
 * (order_small), and count/sum/avg of integers and 64-bit decimals add
 * one group's rows at a time in registers (sum_small).
 * Without group columns (a global aggregate) count(*), count and sum/avg
 * of int32/int64/float64/decimals run straight over the column instead
 * (agg_global.c: no group ids at all), serially when all of them do, and
 * count(*) alone over a whole table takes the files' record counts.
 * The state structs are in agg_int.h.
 * Memory: the row sets are accounted as they grow (xo_rows); the maps and
 * state arrays are accounted after every batch.
 *
 * Parallel: with ctx->pool and ctx->threads > 1, and without string_agg
 * or array_agg, batches are
 * pulled `threads` at a time on the calling thread and aggregated by
 * `threads` workers (agg_op structs of their own, not in the tree), one
 * batch each, in parallel; at the end each worker's groups are looked up in
 * the operator's own tables as a batch of key rows and their states merged
 * (counts and sums add, min/max compare, bool_and/or combine).  A DISTINCT
 * aggregate's worker keeps each value it sees first in one of its groups
 * (dvals, with the worker group in dgid); the merge aggregates those
 * values again into the operator's groups through its own seen set, so a
 * value two workers both saw counts once.  Groups then
 * come out in the order the merge meets them.
 *
 * Spilling (hybrid hash aggregation).  When the next input batch could
 * take the operator past the statement's memory limit (estimate: its rows
 * all new groups, the maps and arrays doubling), the operator stops making
 * groups: from then on a row whose group exists is aggregated as before,
 * and a row of a group not in memory is written to one of AGG_PARTS
 * partitions of a spill file (exec_int.h), chosen by a hash of its key
 * (seeded by the recursion level).  So every group lives either wholly in
 * memory or wholly in one partition, with its rows in input order (which
 * string_agg/array_agg and DISTINCT rely on).  At the end the in-memory
 * groups come out first; their memory is then freed and each partition is
 * aggregated by a HashAggregate of its own over a reader of its blocks,
 * which may spill again one level deeper (at most AGG_MAX_LEVEL).  The
 * parallel path stops at half the limit, merges its workers, and goes on
 * serially (at a quarter of the limit with DISTINCT aggregates, whose
 * values the merge holds twice for a while).  Not covered: the states of
 * groups already in memory still
 * grow (DISTINCT sets, string_agg, array_agg of existing groups; spilling
 * starts at half the limit for them) and fail with HS_NOMEM past the
 * limit when they outgrow it; a global aggregate never spills.  So under a
 * memory limit, aggregates that are all DISTINCT over one argument and
 * insensitive to repeats (count, sum, avg, min, max, bool_and/or) are
 * built as a plain HashAggregate over Distinct(group columns, argument)
 * over a Pick of those columns (xo_hashagg), and both of those spill.
 * Distinct: exec/distinct.c.
 */
#include "exec/agg_int.h"
#include "base/arena.h"

#include "base/hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>


static const char *fn_name(xo_agg_fn f)
{
    static const char *names[] = {"count", "count", "sum", "avg", "min", "max",
                                  "bool_and", "bool_or", "string_agg", "array_agg"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "?";
}

static acc_class class_of(hs_type t)
{
    if (t >= HS_TYPE_INT8 && t <= HS_TYPE_UINT64)
        return ACC_INT;
    if (t == HS_TYPE_FLOAT16 || t == HS_TYPE_FLOAT32 || t == HS_TYPE_FLOAT64)
        return ACC_FLOAT;
    if (t == HS_TYPE_DECIMAL128)
        return ACC_DEC;
    if (t == HS_TYPE_INTERVAL)
        return ACC_IV;
    return ACC_NONE;
}

/* The result field of aggregate a over argument field arg (NULL for count(*)). */
/* vector (list of float32) or halfvec (of float16) argument: its pv_type. */
static pv_type pv_of(const hs_field *f)
{
    if (!f || (f->type != HS_TYPE_LIST && f->type != HS_TYPE_FIXED_LIST) || f->n_children != 1)
        return 0;
    return f->children[0].type == HS_TYPE_FLOAT32 ? PV_VECTOR
           : f->children[0].type == HS_TYPE_FLOAT16 ? PV_HALFVEC : 0;
}

static hs_status result_field(const xo_agg *a, const hs_field *arg, hs_field *out, hs_error *err)
{
    const char *name = a->name ? a->name : fn_name(a->fn);
    memset(out, 0, sizeof *out);
    pv_type pvt = pv_of(arg);
    if ((a->fn == XO_AGG_SUM || a->fn == XO_AGG_AVG) && pvt) {
        /* pgvector: avg/sum(vector) -> vector, of halfvec -> halfvec */
        hs_field e;
        hs_field_init(&e, "item", pvt == PV_VECTOR ? HS_TYPE_FLOAT32 : HS_TYPE_FLOAT16, false);
        if (!e.name)
            return hs_err_nomem(err, 0);
        hs_field_init_list(out, name, true, &e);
        if (!out->name || out->n_children != 1 ||
            hs_field_set_meta(out, "pgvector.type", pvt == PV_VECTOR ? "vector" : "halfvec") != HS_OK) {
            hs_field_clear(out);
            return hs_err_nomem(err, 0);
        }
        return HS_OK;
    }
    switch (a->fn) {
    case XO_AGG_COUNT_STAR: case XO_AGG_COUNT:
        hs_field_init(out, name, HS_TYPE_INT64, false);
        return HS_OK;
    case XO_AGG_SUM:
        switch (class_of(arg->type)) {
        case ACC_INT:
            if (arg->type == HS_TYPE_INT64 || arg->type == HS_TYPE_UINT64) {
                hs_field_init(out, name, HS_TYPE_DECIMAL128, true);
                out->precision = 38;
                out->scale = 0;
            } else {
                hs_field_init(out, name, HS_TYPE_INT64, true);
            }
            return HS_OK;
        case ACC_FLOAT: hs_field_init(out, name, HS_TYPE_FLOAT64, true); return HS_OK;
        case ACC_DEC:
            hs_field_init(out, name, HS_TYPE_DECIMAL128, true);
            out->precision = 38;
            out->scale = arg->scale;
            return HS_OK;
        case ACC_IV: hs_field_init(out, name, HS_TYPE_INTERVAL, true); return HS_OK;
        default: break;
        }
        break;
    case XO_AGG_AVG:
        /* avg(interval) is planned as sum / count (sql/plan_select.c) */
        if (class_of(arg->type) != ACC_NONE && class_of(arg->type) != ACC_IV) {
            hs_field_init(out, name, HS_TYPE_FLOAT64, true);
            return HS_OK;
        }
        break;
    case XO_AGG_MIN: case XO_AGG_MAX:
        if (arg->type == HS_TYPE_MAP)
            break;
        if (hs_field_copy(arg, out) != HS_OK)
            return hs_err_nomem(err, 0);
        hs_free(out->name);
        out->name = hs_strdup(name);
        out->nullable = true;
        return out->name ? HS_OK : hs_err_nomem(err, 0);
    case XO_AGG_BOOL_AND: case XO_AGG_BOOL_OR:
        if (arg->type == HS_TYPE_BOOL) {
            hs_field_init(out, name, HS_TYPE_BOOL, true);
            return HS_OK;
        }
        break;
    case XO_AGG_STRING_AGG:
        if (arg->type == HS_TYPE_STRING || arg->type == HS_TYPE_BINARY) {
            hs_field_init(out, name, arg->type, true);
            return HS_OK;
        }
        break;
    case XO_AGG_ARRAY_AGG: {
        hs_field item;
        if (hs_field_copy(arg, &item) != HS_OK)
            return hs_err_nomem(err, 0);
        hs_free(item.name);
        item.name = hs_strdup("item");
        item.nullable = true;
        if (!item.name) {
            hs_field_clear(&item);
            return hs_err_nomem(err, 0);
        }
        hs_field_init_list(out, name, true, &item);
        if (!out->name || out->n_children != 1) {
            hs_field_clear(out);
            return hs_err_nomem(err, 0);
        }
        return HS_OK;
    }
    }
    return hs_err_set(err, HS_INVALID, "function %s(%s) does not exist", fn_name(a->fn),
                      arg ? hs_type_name(arg->type) : "*");
}

/* ---- state arrays ---- */

static hs_status grow(void **p, int64_t cap, size_t elem, hs_error *err)
{
    void *n = hs_realloc(*p, (size_t)cap * elem);
    if (!n)
        return hs_err_nomem(err, (size_t)cap * elem);
    *p = n;
    return HS_OK;
}

static hs_status ensure_groups(agg_op *s, int64_t need, hs_error *err)
{
    if (need <= s->cap)
        return HS_OK;
    int64_t cap = s->cap ? s->cap : 64;
    while (cap < need)
        cap *= 2;
    HS_TRY(grow((void **)&s->scratch, cap, sizeof(int64_t), err));
    for (int64_t g = s->cap; g < cap; g++)
        s->scratch[g] = -1;
    for (int j = 0; j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j];
        if (a->same >= 0)
            continue;   /* reads aggregate `same`'s arrays */
        HS_TRY(grow((void **)&a->cnt, cap, sizeof *a->cnt, err));
        memset(a->cnt + s->cap, 0, (size_t)(cap - s->cap) * sizeof *a->cnt);
        switch (a->a.fn) {
        case XO_AGG_SUM: case XO_AGG_AVG:
            if (a->pvt) {
                HS_TRY(grow((void **)&a->pv, cap, sizeof *a->pv, err));
                for (int64_t g = s->cap; g < cap; g++)
                    pv_agg_init(&a->pv[g], a->pvt, a->a.fn == XO_AGG_AVG);
            } else if (a->cls == ACC_FLOAT) {
                HS_TRY(grow((void **)&a->fsum, cap, sizeof *a->fsum, err));
                memset(a->fsum + s->cap, 0, (size_t)(cap - s->cap) * sizeof *a->fsum);
            } else {
                HS_TRY(grow((void **)&a->isum, cap, sizeof *a->isum, err));
                memset(a->isum + s->cap, 0, (size_t)(cap - s->cap) * sizeof *a->isum);
            }
            break;
        case XO_AGG_BOOL_AND: case XO_AGG_BOOL_OR:
            HS_TRY(grow((void **)&a->flag, cap, 1, err));
            memset(a->flag + s->cap, a->a.fn == XO_AGG_BOOL_AND, (size_t)(cap - s->cap));
            break;
        case XO_AGG_MIN: case XO_AGG_MAX: case XO_AGG_STRING_AGG: case XO_AGG_ARRAY_AGG:
            HS_TRY(grow((void **)&a->best, cap, sizeof *a->best, err));
            HS_TRY(grow((void **)&a->tail, cap, sizeof *a->tail, err));
            for (int64_t g = s->cap; g < cap; g++)
                a->best[g] = a->tail[g] = -1;
            break;
        default: break;
        }
    }
    s->cap = cap;
    return HS_OK;
}

static hs_status account(agg_op *s, hs_error *err)
{
    int64_t per_group = 8;
    int64_t bytes = (int64_t)(s->map.cap * sizeof(hs_map_slot)) + s->map_key_bytes +
                    (int64_t)(s->imap.cap * sizeof(hs_imap_slot));
    for (int j = 0; j < s->n_aggs; j++) {
        const agg_state *a = &s->aggs[j];
        per_group += 8 + (a->isum ? 16 : 0) + (a->fsum ? 8 : 0) + (a->flag ? 1 : 0) +
                     (a->best ? 16 : 0) + (a->pv ? (int64_t)sizeof(pv_agg) + 8 * 16 : 0);
        bytes += (int64_t)(a->seen.cap * sizeof(hs_map_slot)) + a->seen_bytes + (int64_t)a->nxt.cap +
                 (int64_t)(a->iseen.cap * sizeof(hs_imap_slot));
    }
    bytes += per_group * s->cap + s->gid_cap * 8 + s->ord_cap * 4;
    if (bytes > s->accounted) {
        HS_TRY(xo_mem_reserve(s->op.ctx, bytes - s->accounted, s->op.name, err));
        s->accounted = bytes;
    }
    xo_op_held(&s->op, s->accounted + s->keys.bytes);
    return HS_OK;
}

/* ---- per batch ---- */

#define PK_NONE 0xFF
#define PK_CACHE_BITS 6

/* Group keys of string columns whose row fits in 8 bytes as (length
 * byte, bytes) per column, 0xFF for NULL (TPC-H Q1's l_returnflag,
 * l_linestatus): one 64-bit value, looked up in the imap.  The packing is
 * a function of the key, so a key always takes the same map.  Packed for
 * every row of a batch, one column at a time, in registers: pk[i] and
 * used[i] (bytes, PK_NONE when row i's key does not fit).  A value's
 * bytes are read as one 64-bit load, masked, where the column's buffer
 * holds 8 bytes from its start. */
static void pack_batch(hs_column *const *cols, int n, int64_t rows, uint64_t *pk, uint8_t *used)
{
    memset(pk, 0, (size_t)rows * sizeof *pk);
    memset(used, 0, (size_t)rows);
    for (int c = 0; c < n; c++) {
        const hs_column *col = cols[c];
        const uint8_t *valid = col->validity.data, *data = col->values.data;
        const int32_t *o = HS_COL_OFFSETS(col);
        size_t dlen = col->values.len;
        for (int64_t i = 0; i < rows; i++) {
            unsigned pos = used[i];
            if (pos == PK_NONE)
                continue;
            if (valid && !hs_bit_get(valid, i)) {
                if (pos >= 8) {
                    used[i] = PK_NONE;
                } else {
                    pk[i] |= (uint64_t)0xFF << (8 * pos);
                    used[i] = (uint8_t)(pos + 1);
                }
                continue;
            }
            int32_t len = o[i + 1] - o[i];
            if (len < 0 || len > 7 || pos + 1 + (unsigned)len > 8) {
                used[i] = PK_NONE;
                continue;
            }
            uint64_t w = 0;
            if (len > 0) {
                if ((size_t)o[i] + 8 <= dlen)
                    memcpy(&w, data + o[i], 8);
                else
                    memcpy(&w, data + o[i], (size_t)len);
                w &= ((uint64_t)1 << (8 * len)) - 1;
            }
            /* pos <= 7 here, and the length byte plus len bytes end by byte 8 */
            pk[i] |= ((uint64_t)len | (w << 8)) << (8 * pos);
            used[i] = (uint8_t)(pos + 1 + (unsigned)len);
        }
    }
}

/* Two integer group columns, both non-null and within int32 (TPC-H Q20's
 * (l_partkey, l_suppkey)): one 64-bit value. */
static bool pack_pair(hs_column *const *cols, int64_t row, uint64_t *out)
{
    if (!hs_col_is_valid(cols[0], row) || !hs_col_is_valid(cols[1], row))
        return false;
    bool big;
    int64_t a = xo_int_at(cols[0], row, &big), b = xo_int_at(cols[1], row, &big);
    if (a != (int32_t)a || b != (int32_t)b)
        return false;
    *out = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    return true;
}

/* True when row i's group columns hold what row i - 1's do (both NULL,
 * the same bytes, the same integer): its group without building the row
 * key (TPC-H Q16's (p_brand, p_type, p_size) come in runs, partsupp being
 * ordered by part).  False when unsure: the key decides then. */
static bool same_as_prev(hs_column *const *cols, int n, int64_t i)
{
    for (int c = 0; c < n; c++) {
        const hs_column *col = cols[c];
        bool v1 = hs_col_is_valid(col, i);
        if (v1 != hs_col_is_valid(col, i - 1))
            return false;
        if (!v1)
            continue;
        if (col->type == HS_TYPE_STRING || col->type == HS_TYPE_BINARY) {
            const int32_t *o = HS_COL_OFFSETS(col);
            int32_t len = o[i + 1] - o[i];
            if (len != o[i] - o[i - 1] ||
                memcmp(col->values.data + o[i], col->values.data + o[i - 1], (size_t)len) != 0)
                return false;
        } else if (xo_is_int_type(col->type)) {
            bool big1, big0;
            if (xo_int_at(col, i, &big1) != xo_int_at(col, i - 1, &big0) || big1 != big0)
                return false;
        } else {
            return false;
        }
    }
    return true;
}

static hs_status assign_groups(agg_op *s, const hs_batch *b, hs_error *err)
{
    if (b->n_rows > s->gid_cap) {
        HS_TRY(grow((void **)&s->gid, b->n_rows, sizeof *s->gid, err));
        s->gid_cap = b->n_rows;
    }
    if (s->n_groups == 0) {
        memset(s->gid, 0, (size_t)b->n_rows * sizeof *s->gid);
        return HS_OK;
    }
    hs_buf fresh = {0};
    hs_status st = HS_OK;
    const hs_column *kc = b->cols[0];
    /* runs of one key (sorted or clustered input: TPC-H lineitem by
     * l_orderkey) reuse the previous row's group without a lookup */
    bool have_prev = false;
    int64_t prev_key = 0, prev_g = 0;
    for (int64_t i = 0; s->int_key && i < b->n_rows && st == HS_OK; i++) {
        uint64_t g;
        bool found = true;
        if (hs_col_is_valid(kc, i)) {
            bool big;
            int64_t v = xo_int_at(kc, i, &big);
            if (have_prev && v == prev_key) {
                s->gid[i] = prev_g;
                continue;
            }
            if (s->probe_only) {
                if (!hs_imap_get(&s->imap, (uint64_t)v, &g))
                    g = UINT64_MAX;
            } else {
                st = hs_imap_get_or_put(&s->imap, (uint64_t)v, (uint64_t)s->n_total, &g, &found);
            }
            have_prev = true;
            prev_key = v;
            prev_g = (int64_t)g;
        } else {
            if (s->null_gid < 0 && !s->probe_only) {
                s->null_gid = s->n_total;
                found = false;
            }
            g = (uint64_t)s->null_gid;
        }
        if (st == HS_OK && !found) {
            s->n_total++;
            st = HS_VEC_PUSH(&fresh, int64_t, i);
        }
        s->gid[i] = (int64_t)g;
    }
    hs_buf prevk = {0};
    int64_t prev_row = -1;   /* the last row given prev_g by its row key */
    bool have_pp = false;
    uint64_t prev_pk = 0;
    int64_t prev_pg = 0;
    if (s->str_keys && !s->int_key && b->n_rows > 0) {
        if (b->n_rows > s->pk_cap) {
            HS_TRY(grow((void **)&s->pk, b->n_rows, sizeof *s->pk, err));
            HS_TRY(grow((void **)&s->pk_used, b->n_rows, 1, err));
            s->pk_cap = b->n_rows;
        }
        pack_batch(b->cols, s->n_groups, b->n_rows, s->pk, s->pk_used);
    }
    /* packed keys seen in this batch, direct-mapped by a hash of the key:
     * a few groups in no order (TPC-H Q1's 4 of (l_returnflag,
     * l_linestatus)) are found without a map lookup */
    uint64_t pc_key[1 << PK_CACHE_BITS];
    int64_t pc_gid[1 << PK_CACHE_BITS];
    uint8_t pc_ok[1 << PK_CACHE_BITS] = {0};
    for (int64_t i = 0; !s->int_key && i < b->n_rows && st == HS_OK; i++) {
        uint64_t pk;
        if ((s->str_keys && s->pk_used[i] != PK_NONE && (pk = s->pk[i], true)) ||
            (s->int_pair && pack_pair(b->cols, i, &pk))) {
            if (have_pp && pk == prev_pk) {
                s->gid[i] = prev_pg;
                continue;
            }
            unsigned h = (unsigned)((pk * 0x9E3779B97F4A7C15ULL) >> (64 - PK_CACHE_BITS));
            if (pc_ok[h] && pc_key[h] == pk) {
                s->gid[i] = pc_gid[h];
                continue;
            }
            uint64_t g;
            bool found = true;
            if (s->probe_only) {
                if (!hs_imap_get(&s->imap, pk, &g))
                    g = UINT64_MAX;
            } else {
                st = hs_imap_get_or_put(&s->imap, pk, (uint64_t)s->n_total, &g, &found);
            }
            if (st != HS_OK)
                break;
            if (!found) {
                s->n_total++;
                st = HS_VEC_PUSH(&fresh, int64_t, i);
            }
            if (g != UINT64_MAX) {
                pc_ok[h] = 1;
                pc_key[h] = pk;
                pc_gid[h] = (int64_t)g;
            }
            s->gid[i] = (int64_t)g;
            have_pp = true;
            prev_pk = pk;
            prev_pg = (int64_t)g;
            continue;
        }
        if (i > 0 && prev_row == i - 1 && same_as_prev(b->cols, s->n_groups, i)) {
            s->gid[i] = prev_g;
            prev_row = i;
            continue;
        }
        hs_buf_reset(&s->kb);
        for (int c = 0; c < s->n_groups && st == HS_OK; c++)
            st = xo_key_append(&s->kb, b->cols[c], i);
        if (st != HS_OK)
            break;
        if (have_prev && prevk.len == s->kb.len && !memcmp(prevk.data, s->kb.data, s->kb.len)) {
            s->gid[i] = prev_g;
            prev_row = i;
            continue;
        }
        uint64_t g;
        bool found = true;
        if (s->probe_only) {
            if (!hs_map_get(&s->map, s->kb.data, s->kb.len, &g))
                g = UINT64_MAX;
        } else {
            st = hs_map_get_or_put(&s->map, s->kb.data, s->kb.len, (uint64_t)s->n_total, &g,
                                   &found);
        }
        if (st != HS_OK)
            break;
        if (!found) {
            s->map_key_bytes += (int64_t)s->kb.len;
            s->n_total++;
            st = HS_VEC_PUSH(&fresh, int64_t, i);
        }
        s->gid[i] = (int64_t)g;
        hs_buf_reset(&prevk);
        if (st == HS_OK)
            st = hs_buf_append(&prevk, s->kb.data, s->kb.len);
        have_prev = true;
        prev_g = (int64_t)g;
        prev_row = i;
    }
    hs_buf_free(&prevk);
    if (st != HS_OK) {
        hs_buf_free(&fresh);
        return st == HS_NOMEM ? hs_err_nomem(err, 0) : st;
    }
    if (fresh.len) {
        hs_batch view = {.schema = s->key_schema, .n_rows = b->n_rows, .n_cols = s->n_groups,
                         .cols = b->cols};
        st = xo_rows_append_take(&s->keys, s->op.ctx, s->op.name, &view, (int64_t *)fresh.data,
                                 (int64_t)HS_VEC_LEN(&fresh, int64_t), err);
    }
    hs_buf_free(&fresh);
    return st;
}

/* DISTINCT: true when (g, value of row i) was not seen before (and records it). */
static hs_status first_seen(agg_op *s, agg_state *a, int64_t g, const hs_column *c, int64_t i,
                            bool *first)
{
    uint64_t v;
    bool found;
    if (g >= 0 && g <= (int64_t)UINT32_MAX && xo_is_int_type(c->type)) {
        bool big;
        int64_t x = xo_int_at(c, i, &big);
        if (!big && x >= INT32_MIN && x <= INT32_MAX) {
            /* (a given pair always takes the same map) */
            HS_TRY(hs_imap_get_or_put(&a->iseen, ((uint64_t)g << 32) | (uint32_t)(int32_t)x, 0, &v,
                                      &found));
            *first = !found;
            return HS_OK;
        }
    }
    hs_buf_reset(&s->kb);
    HS_TRY(hs_buf_append(&s->kb, &g, sizeof g));
    HS_TRY(xo_key_append(&s->kb, c, i));
    HS_TRY(hs_map_get_or_put(&a->seen, s->kb.data, s->kb.len, 0, &v, &found));
    if (!found)
        a->seen_bytes += (int64_t)s->kb.len;
    *first = !found;
    return HS_OK;
}

static hs_status add_int(agg_state *a, int64_t g, __int128 v, hs_error *err)
{
    if (a->cls == ACC_IV) {
        hs_interval x, y, r;
        memcpy(&x, &a->isum[g], 16);
        memcpy(&y, &v, 16);
        if (!hs_interval_add(x, y, 1, &r))
            return hs_err_set(err, HS_INVALID, "interval out of range");
        memcpy(&a->isum[g], &r, 16);
        return HS_OK;
    }
    if (__builtin_add_overflow(a->isum[g], v, &a->isum[g]))
        return hs_err_set(err, HS_INVALID, "%s: numeric field overflow", fn_name(a->a.fn));
    return HS_OK;
}

/* count, count(*) (c NULL) and sum/avg of int32/int64 and of decimals
 * within 64 bits when the batch's groups are few (s->ord_ok: its rows
 * grouped by group id, order_small): each group's count and sum in
 * registers, added to the states at the end with the overflow check (the
 * partial sums of at most 2^31 64-bit values cannot overflow).  false,
 * with nothing changed: not covered, or a decimal needs more than 64 bits
 * (the general loops then run). */
static bool sum_small(const agg_op *s, agg_state *a, const hs_column *c, bool sum, hs_status *st,
                      hs_error *err)
{
    int64_t ng = s->n_total;
    if (!s->ord_ok || ng > AGG_SMALL)
        return false;
    int kind = 0;
    if (sum) {
        if (c->type == HS_TYPE_DECIMAL128)
            kind = 3;
        else if (c->type == HS_TYPE_INT64)
            kind = 2;
        else if (c->type == HS_TYPE_INT32)
            kind = 1;
        else
            return false;
    }
    __int128 sums[AGG_SMALL];
    int64_t cnts[AGG_SMALL];
    const uint8_t *valid = c ? c->validity.data : NULL;
    const uint8_t *d = c ? c->values.data : NULL;
    const int32_t *ord = s->ord;
    bool wide = false;
    for (int64_t g = 0; g < ng; g++) {
        int64_t k0 = s->gstart[g], k1 = s->gstart[g + 1], cn = 0;
        __int128 sm = 0;
#define SMALL_LOOP(READ)                                                       \
    for (int64_t k = k0; k < k1; k++) {                                        \
        int32_t i = ord[k];                                                    \
        int64_t ok = !valid || hs_bit_get(valid, i);                           \
        int64_t x;                                                             \
        READ;                                                                  \
        cn += ok;                                                              \
        sm += ok ? x : 0;                                                      \
    }
        if (kind == 3) {
            SMALL_LOOP(__int128 w; memcpy(&w, d + 16 * (size_t)i, 16);
                       wide |= ok && w != (int64_t)w; x = (int64_t)w)
        } else if (kind == 2) {
            SMALL_LOOP(memcpy(&x, d + 8 * (size_t)i, 8))
        } else if (kind == 1) {
            SMALL_LOOP(int32_t v; memcpy(&v, d + 4 * (size_t)i, 4); x = v)
        } else if (valid) {
            SMALL_LOOP(x = 0)
        } else {
            cn = k1 - k0;
        }
#undef SMALL_LOOP
        sums[g] = sm;
        cnts[g] = cn;
    }
    if (wide)
        return false;
    *st = HS_OK;
    for (int64_t g = 0; g < ng; g++) {
        a->cnt[g] += cnts[g];
        if (kind && __builtin_add_overflow(a->isum[g], sums[g], &a->isum[g])) {
            *st = hs_err_set(err, HS_INVALID, "%s: numeric field overflow",
                             a->a.fn == XO_AGG_SUM ? "sum" : "avg");
            break;
        }
    }
    return true;
}

/* Tight loops for the common cases: count, and sum/avg of int32, int64
 * and float64 columns, without DISTINCT.  Returns false when a case is
 * not covered (the general loop then runs).  Integer sums cannot overflow
 * __int128 within one batch from a zero start, but the running sum can:
 * the check stays. */
static bool update_fast(agg_state *a, const int64_t *gid, const hs_column *c, int64_t n,
                        hs_status *st, hs_error *err)
{
    if (a->a.distinct || c->type == HS_TYPE_NA)
        return false;
    const uint8_t *valid = c->validity.data;
    xo_agg_fn fn = a->a.fn;
    if (fn == XO_AGG_COUNT) {
        for (int64_t i = 0; i < n; i++)
            a->cnt[gid[i]] += !valid || hs_bit_get(valid, i);
        return true;
    }
    if (fn != XO_AGG_SUM && fn != XO_AGG_AVG)
        return false;
    *st = HS_OK;
    switch (c->type) {
    case HS_TYPE_FLOAT64: {
        const double *v = HS_COL_VALUES(c, double);
        for (int64_t i = 0; i < n; i++)
            if (!valid || hs_bit_get(valid, i)) {
                a->cnt[gid[i]]++;
                a->fsum[gid[i]] += v[i];
            }
        return true;
    }
    case HS_TYPE_INT64: case HS_TYPE_INT32: {
        bool w64 = c->type == HS_TYPE_INT64;
        for (int64_t i = 0; i < n; i++)
            if (!valid || hs_bit_get(valid, i)) {
                int64_t g = gid[i];
                __int128 x = w64 ? HS_COL_VALUES(c, int64_t)[i] : HS_COL_VALUES(c, int32_t)[i];
                a->cnt[g]++;
                if (__builtin_add_overflow(a->isum[g], x, &a->isum[g])) {
                    *st = hs_err_set(err, HS_INVALID, "%s: numeric field overflow",
                                     fn == XO_AGG_SUM ? "sum" : "avg");
                    return true;
                }
            }
        return true;
    }
    case HS_TYPE_DECIMAL128: {
        for (int64_t i = 0; i < n; i++)
            if (!valid || hs_bit_get(valid, i)) {
                int64_t g = gid[i];
                __int128 x;
                memcpy(&x, c->values.data + 16 * i, 16);
                a->cnt[g]++;
                if (__builtin_add_overflow(a->isum[g], x, &a->isum[g])) {
                    *st = hs_err_set(err, HS_INVALID, "%s: numeric field overflow",
                                     fn == XO_AGG_SUM ? "sum" : "avg");
                    return true;
                }
            }
        return true;
    }
    default:
        return false;
    }
}

/* DISTINCT on a worker: rows pick[..] of c, first seen in their groups,
 * kept for the merge (their groups are in dgid). */
static hs_status keep_distinct(agg_op *s, agg_state *a, const hs_column *c, const hs_buf *pick,
                               hs_error *err)
{
    int64_t n = (int64_t)HS_VEC_LEN(pick, int64_t);
    if (n == 0)
        return HS_OK;
    hs_column *cols[1] = {(hs_column *)c};
    hs_batch view = {.schema = a->dschema, .n_rows = c->length, .n_cols = 1, .cols = cols};
    return xo_rows_append_take(&a->dvals, s->op.ctx, s->op.name, &view, (const int64_t *)pick->data,
                               n, err);
}

/* DISTINCT: whether row i of c is new in group g (first_seen); a worker
 * also notes it for keep_distinct. */
static hs_status distinct_new(agg_op *s, agg_state *a, int64_t g, const hs_column *c, int64_t i,
                              hs_buf *pick, bool *first)
{
    HS_TRY(first_seen(s, a, g, c, i, first));
    if (*first && a->dkeep &&
        (HS_VEC_PUSH(pick, int64_t, i) != HS_OK || HS_VEC_PUSH(&a->dgid, int64_t, g) != HS_OK))
        return HS_NOMEM;
    return HS_OK;
}

/* sum/avg of vector/halfvec: each non-null value into its group's
 * accumulator (DISTINCT values once per group). */
static hs_status update_pv(agg_op *s, agg_state *a, const hs_column *c, int64_t n,
                           const int64_t *gid, hs_error *err)
{
    const hs_column *ch = c->children[0];
    size_t es = a->pvt == PV_VECTOR ? 4 : 2;
    hs_buf pick = {0};
    hs_status st = HS_OK;
    for (int64_t i = 0; i < n && st == HS_OK; i++) {
        if (!hs_col_is_valid(c, i))
            continue;
        int64_t g = gid[i];
        if (a->a.distinct) {
            bool first;
            if (distinct_new(s, a, g, c, i, &pick, &first) != HS_OK) {
                st = hs_err_nomem(err, 0);
                break;
            }
            if (!first)
                continue;
        }
        int64_t o0, o1;
        if (c->type == HS_TYPE_FIXED_LIST) {
            o0 = i * c->width;
            o1 = o0 + c->width;
        } else {
            o0 = HS_COL_OFFSETS(c)[i];
            o1 = HS_COL_OFFSETS(c)[i + 1];
        }
        pv_val v = {ch->values.data + es * (size_t)o0, es * (size_t)(o1 - o0)};
        a->cnt[g]++;
        st = pv_agg_add(&a->pv[g], v, err);
    }
    if (st == HS_OK)
        st = keep_distinct(s, a, c, &pick, err);
    hs_buf_free(&pick);
    return st;
}

/* Aggregate a over b's rows, row i into group gid[i]. */
static hs_status update_agg(agg_op *s, agg_state *a, const hs_batch *b, const int64_t *gid,
                            hs_error *err)
{
    int64_t n = b->n_rows;
    if (a->a.fn == XO_AGG_COUNT_STAR) {
        hs_status cst = HS_OK;
        if (sum_small(s, a, NULL, false, &cst, err))
            return cst;
        for (int64_t i = 0; i < n; i++)
            a->cnt[gid[i]]++;
        return HS_OK;
    }
    const hs_column *c = b->cols[a->a.arg];
    if (a->pvt)
        return update_pv(s, a, c, n, gid, err);
    hs_status fst = HS_OK;
    if (!a->a.distinct && c->type != HS_TYPE_NA &&
        (a->a.fn == XO_AGG_COUNT || a->a.fn == XO_AGG_SUM || a->a.fn == XO_AGG_AVG) &&
        sum_small(s, a, c, a->a.fn != XO_AGG_COUNT, &fst, err))
        return fst;
    if (update_fast(a, gid, c, n, &fst, err))
        return fst;
    hs_buf picked = {0};   /* rows to store (string/array_agg, min/max candidates) */
    hs_buf touched = {0};  /* min/max: groups with a candidate in this batch */
    hs_buf dpick = {0};    /* DISTINCT on a worker: rows first seen (keep_distinct) */
    hs_status st = HS_OK;
    for (int64_t i = 0; i < n && st == HS_OK; i++) {
        int64_t g = gid[i];
        bool valid = hs_col_is_valid(c, i) && c->type != HS_TYPE_NA;
        if (!valid && a->a.fn != XO_AGG_ARRAY_AGG)
            continue;
        if (a->a.distinct) {
            bool first;
            st = distinct_new(s, a, g, c, i, &dpick, &first);
            if (st != HS_OK || !first)
                continue;
        }
        a->cnt[g]++;
        switch (a->a.fn) {
        case XO_AGG_SUM: case XO_AGG_AVG:
            if (a->cls == ACC_FLOAT) {
                a->fsum[g] += xo_float_at(c, i);
            } else if (a->cls == ACC_DEC || a->cls == ACC_IV) {
                __int128 v;
                memcpy(&v, c->values.data + 16 * i, 16);
                st = add_int(a, g, v, err);
            } else {
                bool big;
                int64_t v = xo_int_at(c, i, &big);
                st = add_int(a, g, big ? (__int128)(uint64_t)v : (__int128)v, err);
            }
            break;
        case XO_AGG_BOOL_AND: case XO_AGG_BOOL_OR: {
            uint8_t v = hs_bit_get(c->values.data, i);
            a->flag[g] = a->a.fn == XO_AGG_BOOL_AND ? (a->flag[g] & v) : (a->flag[g] | v);
            break;
        }
        case XO_AGG_MIN: case XO_AGG_MAX: {
            int64_t cur = s->scratch[g];
            if (cur < 0) {
                st = HS_VEC_PUSH(&touched, int64_t, g);
                s->scratch[g] = i;
            } else {
                int r = xo_val_cmp(c, i, c, cur);
                if (a->a.fn == XO_AGG_MIN ? r < 0 : r > 0)
                    s->scratch[g] = i;
            }
            break;
        }
        case XO_AGG_STRING_AGG: case XO_AGG_ARRAY_AGG:
            st = HS_VEC_PUSH(&picked, int64_t, i);
            break;
        default: break;
        }
    }
    if (st == HS_NOMEM)
        (void)hs_err_nomem(err, 0);   /* keeps an earlier message */
    hs_column *view_cols[2 + XO_AGG_MAX_ORDER] = {(hs_column *)c,
                                                  a->a.sep_col >= 0 ? b->cols[a->a.sep_col] : NULL};
    for (int k = 0; k < a->a.n_order; k++)
        view_cols[a->first_ocol + k] = b->cols[a->a.order[k].col];
    hs_batch view = {.schema = a->store_schema, .n_rows = n,
                     .n_cols = a->store_schema.n_children, .cols = view_cols};
    if (st == HS_OK && (a->a.fn == XO_AGG_MIN || a->a.fn == XO_AGG_MAX)) {
        /* keep only the candidates that beat the stored best */
        int64_t nt = (int64_t)HS_VEC_LEN(&touched, int64_t);
        int64_t *tg = (int64_t *)touched.data;
        int64_t base = xo_rows_count(&a->store);
        for (int64_t k = 0; k < nt && st == HS_OK; k++) {
            int64_t g = tg[k], i = s->scratch[g];
            s->scratch[g] = -1;
            if (a->best[g] >= 0) {
                int r = xo_val_cmp(c, i, a->store.b->cols[0], a->best[g]);
                if (!(a->a.fn == XO_AGG_MIN ? r < 0 : r > 0))
                    continue;
            }
            a->best[g] = base + (int64_t)HS_VEC_LEN(&picked, int64_t);
            st = HS_VEC_PUSH(&picked, int64_t, i);
        }
        if (st == HS_OK)
            st = xo_rows_append_take(&a->store, s->op.ctx, s->op.name, &view,
                                     (int64_t *)picked.data, (int64_t)HS_VEC_LEN(&picked, int64_t),
                                     err);
    } else if (st == HS_OK && (a->a.fn == XO_AGG_STRING_AGG || a->a.fn == XO_AGG_ARRAY_AGG)) {
        int64_t np = (int64_t)HS_VEC_LEN(&picked, int64_t);
        int64_t *pi = (int64_t *)picked.data;
        int64_t base = xo_rows_count(&a->store);
        st = xo_rows_append_take(&a->store, s->op.ctx, s->op.name, &view, pi, np, err);
        if (st == HS_OK && hs_buf_reserve(&a->nxt, (size_t)np * 8) != HS_OK)
            st = hs_err_nomem(err, 0);
        for (int64_t k = 0; k < np && st == HS_OK; k++) {
            int64_t g = gid[pi[k]], idx = base + k;
            if (a->best[g] < 0)
                a->best[g] = idx;
            else
                HS_VEC_AT(&a->nxt, int64_t, a->tail[g]) = idx;
            a->tail[g] = idx;
            st = HS_VEC_PUSH(&a->nxt, int64_t, -1);
        }
    }
    if (st == HS_OK)
        st = keep_distinct(s, a, c, &dpick, err);
    hs_buf_free(&picked);
    hs_buf_free(&touched);
    hs_buf_free(&dpick);
    return st;
}

/* ---- results ---- */

static hs_status append_i128_dec(hs_column *col, __int128 v)
{
    return hs_col_append_fixed(col, &v);
}

static hs_status build_string_agg(agg_op *s, agg_state *a, hs_column *col, hs_error *err)
{
    hs_buf tmp = {0};
    hs_status st = HS_OK;
    const hs_column *vals = a->store.b ? a->store.b->cols[0] : NULL;
    const hs_column *seps = a->store.b && a->a.sep_col >= 0 ? a->store.b->cols[1] : NULL;
    size_t sep_len = a->a.sep ? strlen(a->a.sep) : 0;
    for (int64_t g = 0; g < s->n_total && st == HS_OK; g++) {
        if (a->best[g] < 0) {
            st = hs_col_append_null(col);
            continue;
        }
        hs_buf_reset(&tmp);
        bool first = true;
        for (int64_t k = a->best[g]; k >= 0 && st == HS_OK; k = HS_VEC_AT(&a->nxt, int64_t, k)) {
            if (!first) {
                if (seps) {
                    if (hs_col_is_valid(seps, k)) {
                        const int32_t *o = HS_COL_OFFSETS(seps);
                        st = hs_buf_append(&tmp, seps->values.data + o[k], (size_t)(o[k + 1] - o[k]));
                    }
                } else if (sep_len) {
                    st = hs_buf_append(&tmp, a->a.sep, sep_len);
                }
            }
            first = false;
            const int32_t *o = HS_COL_OFFSETS(vals);
            if (st == HS_OK)
                st = hs_buf_append(&tmp, vals->values.data + o[k], (size_t)(o[k + 1] - o[k]));
        }
        if (st == HS_OK)
            st = hs_col_append_bytes(col, tmp.data ? tmp.data : (const uint8_t *)"", tmp.len);
    }
    hs_buf_free(&tmp);
    return st == HS_NOMEM ? hs_err_nomem(err, 0) : st;
}

static hs_status build_array_agg(agg_op *s, agg_state *a, hs_column *col, hs_error *err)
{
    int64_t n_vals = xo_rows_count(&a->store);
    int64_t *order = hs_malloc((size_t)(n_vals ? n_vals : 1) * sizeof *order);
    if (!order)
        return hs_err_nomem(err, 0);
    int64_t k = 0;
    hs_status st = hs_col_ensure_validity(col);
    if (st == HS_OK)
        st = hs_col_reserve(col, s->n_total, 0);
    if (st != HS_OK) {
        hs_free(order);
        return hs_err_nomem(err, 0);
    }
    int32_t *off = HS_COL_OFFSETS(col);
    int64_t nulls = 0;
    off[0] = 0;
    for (int64_t g = 0; g < s->n_total; g++) {
        bool valid = a->best[g] >= 0;
        for (int64_t r = a->best[g]; r >= 0; r = HS_VEC_AT(&a->nxt, int64_t, r))
            order[k++] = r;
        off[g + 1] = (int32_t)k;
        if (valid)
            hs_bit_set(col->validity.data, g);
        else {
            hs_bit_clear(col->validity.data, g);
            nulls++;
        }
    }
    hs_column *elems = NULL;
    if (n_vals > 0)
        st = hs_col_take(a->store.b->cols[0], order, k, &elems, err);
    hs_free(order);
    if (st != HS_OK)
        return st;
    if (elems) {
        hs_col_free(col->children[0]);
        col->children[0] = elems;
    }
    col->length = s->n_total;
    col->null_count = nulls;
    col->offsets.len = (size_t)(s->n_total + 1) * 4;
    col->validity.len = (size_t)(s->n_total + 7) / 8;
    return HS_OK;
}

/* string_agg/array_agg ... ORDER BY: sorts all stored values by (owning
 * group, order keys) at once and rebuilds each group's chain in that
 * order (stable, so ties keep input order). */
static hs_status order_chains(agg_op *s, agg_state *a, hs_error *err)
{
    int64_t nv = xo_rows_count(&a->store);
    if (a->a.n_order == 0 || nv < 2)
        return HS_OK;
    hs_field of;
    hs_field_init(&of, "g", HS_TYPE_INT64, false);
    hs_column *owner = NULL;
    hs_status st = hs_col_create(&of, nv, &owner, err);
    hs_field_clear(&of);
    HS_TRY(st);
    int64_t *own = hs_malloc((size_t)nv * sizeof *own), *perm = hs_malloc((size_t)nv * sizeof *perm);
    int nc = 1 + a->store.b->n_cols;
    hs_column **cols = hs_calloc((size_t)nc, sizeof *cols);
    xo_sort_key *keys = hs_calloc((size_t)(1 + a->a.n_order), sizeof *keys);
    if (!own || !perm || !cols || !keys) {
        st = hs_err_nomem(err, 0);
        goto done;
    }
    for (int64_t g = 0; g < s->n_total; g++)
        for (int64_t k = a->best[g]; k >= 0; k = HS_VEC_AT(&a->nxt, int64_t, k))
            own[k] = g;
    if (hs_col_append_fixed_n(owner, own, nv) != HS_OK) {
        st = hs_err_nomem(err, 0);
        goto done;
    }
    cols[0] = owner;
    for (int c = 0; c < a->store.b->n_cols; c++)
        cols[1 + c] = a->store.b->cols[c];
    keys[0] = (xo_sort_key){0, false, false};
    for (int k = 0; k < a->a.n_order; k++) {
        keys[1 + k] = a->okeys[k];
        keys[1 + k].col += 1;
    }
    st = xo_sort_perm(s->op.ctx, cols, 1 + a->a.n_order, keys, nv, perm, err);
    if (st != HS_OK)
        goto done;
    for (int64_t g = 0; g < s->n_total; g++)
        a->best[g] = a->tail[g] = -1;
    for (int64_t i = 0; i < nv; i++) {
        int64_t k = perm[i], g = own[k];
        if (a->best[g] < 0)
            a->best[g] = k;
        else
            HS_VEC_AT(&a->nxt, int64_t, a->tail[g]) = k;
        a->tail[g] = k;
        HS_VEC_AT(&a->nxt, int64_t, k) = -1;
    }
done:
    hs_col_free(owner);
    hs_free(own);
    hs_free(perm);
    hs_free(cols);
    hs_free(keys);
    return st;
}

static hs_status build_agg_col(agg_op *s, agg_state *a, const hs_field *f, hs_column **out,
                               hs_error *err)
{
    *out = NULL;
    int64_t n = s->n_total;
    agg_state shared;
    if (a->same >= 0) {
        /* the state of the aggregate it shares (read only), this one's
         * function: count(x) from sum(x)'s counts, a repeated sum(x) */
        shared = s->aggs[a->same];
        shared.a = a->a;
        a = &shared;
    }
    if (a->a.fn == XO_AGG_STRING_AGG || a->a.fn == XO_AGG_ARRAY_AGG)
        HS_TRY(order_chains(s, a, err));
    if (a->a.fn == XO_AGG_MIN || a->a.fn == XO_AGG_MAX) {
        if (!a->store.b)
            HS_TRY(xo_rows_init(&a->store, &a->store_schema, err));
        return hs_col_take_nullable(a->store.b->cols[0], a->best, n, out, err);
    }
    hs_column *col;
    HS_TRY(hs_col_create(f, n, &col, err));
    hs_status st = HS_OK;
    if (a->pvt) {
        hs_arena ar = {0};
        for (int64_t g = 0; g < n && st == HS_OK; g++) {
            pv_val v;
            bool null;
            st = pv_agg_final(&a->pv[g], &ar, &v, &null, err);
            if (st == HS_OK && null)
                st = hs_col_append_null(col);
            else if (st == HS_OK) {
                st = hs_col_append_fixed_n(col->children[0], v.p,
                                           (int64_t)(v.n / (a->pvt == PV_VECTOR ? 4 : 2)));
                if (st == HS_OK)
                    st = hs_col_list_end(col);
                if (st != HS_OK)
                    st = hs_err_nomem(err, 0);
            }
            hs_arena_reset(&ar);
        }
        hs_arena_destroy(&ar);
        if (st != HS_OK) {
            hs_col_free(col);
            return st;
        }
        *out = col;
        return HS_OK;
    }
    if (a->a.fn == XO_AGG_STRING_AGG)
        st = build_string_agg(s, a, col, err);
    else if (a->a.fn == XO_AGG_ARRAY_AGG)
        st = build_array_agg(s, a, col, err);
    for (int64_t g = 0; g < n && st == HS_OK && a->a.fn != XO_AGG_STRING_AGG &&
                        a->a.fn != XO_AGG_ARRAY_AGG; g++) {
        if (a->a.fn == XO_AGG_COUNT || a->a.fn == XO_AGG_COUNT_STAR) {
            st = hs_col_append_fixed(col, &a->cnt[g]);
            continue;
        }
        if (a->cnt[g] == 0) {
            st = hs_col_append_null(col);
            continue;
        }
        switch (a->a.fn) {
        case XO_AGG_SUM:
            if (a->cls == ACC_FLOAT || a->cls == ACC_IV) {
                st = hs_col_append_fixed(col, a->cls == ACC_IV ? (void *)&a->isum[g] : (void *)&a->fsum[g]);
            } else if (f->type == HS_TYPE_INT64) {
                if (a->isum[g] > INT64_MAX || a->isum[g] < INT64_MIN) {
                    hs_col_free(col);
                    return hs_err_set(err, HS_INVALID, "sum: bigint out of range");
                }
                int64_t v = (int64_t)a->isum[g];
                st = hs_col_append_fixed(col, &v);
            } else {
                st = append_i128_dec(col, a->isum[g]);
            }
            break;
        case XO_AGG_AVG: {
            double v;
            if (a->cls == ACC_FLOAT) {
                v = a->fsum[g] / (double)a->cnt[g];
            } else {
                long double q = (long double)a->isum[g] / (long double)a->cnt[g];
                if (a->cls == ACC_DEC)
                    for (int k = 0; k < a->scale; k++)
                        q /= 10;
                v = (double)q;
            }
            st = hs_col_append_fixed(col, &v);
            break;
        }
        case XO_AGG_BOOL_AND: case XO_AGG_BOOL_OR:
            st = hs_col_append_fixed(col, &a->flag[g]);
            break;
        default: break;
        }
    }
    if (st != HS_OK) {
        hs_col_free(col);
        if (st == HS_NOMEM)
            (void)hs_err_nomem(err, 0);
        return st;
    }
    *out = col;
    return HS_OK;
}

static hs_status agg_finish(agg_op *s, hs_error *err)
{
    int nc = s->op.schema.n_children;
    hs_column **cols = hs_calloc((size_t)(nc ? nc : 1), sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 0);
    hs_status st = HS_OK;
    if (s->n_groups > 0) {
        if (!s->keys.b)
            st = xo_rows_init(&s->keys, &s->key_schema, err);
        for (int c = 0; c < s->n_groups && st == HS_OK; c++) {
            cols[c] = s->keys.b->cols[c];
            s->keys.b->cols[c] = NULL;
        }
        if (s->keys.b)
            s->keys.b->n_cols = 0;
    }
    for (int j = 0; j < s->n_aggs && st == HS_OK; j++)
        st = build_agg_col(s, &s->aggs[j], &s->op.schema.children[s->n_groups + j],
                           &cols[s->n_groups + j], err);
    if (st == HS_OK)
        st = xo_batch_wrap(&s->op.schema, nc, cols, s->n_total, &s->result, err);
    else
        for (int c = 0; c < nc; c++)
            hs_col_free(cols[c]);
    hs_free(cols);
    return st;
}

/* At most AGG_SMALL groups (TPC-H Q1's 4) and a batch of some size: the
 * batch's row numbers grouped by group id, in input order within a group
 * (a counting sort: ord[gstart[g] .. gstart[g + 1]) are group g's rows),
 * for sum_small. */
static hs_status order_small(agg_op *s, int64_t n, hs_error *err)
{
    s->ord_ok = false;
    if (s->n_total > AGG_SMALL || n < 64 || n > INT32_MAX)
        return HS_OK;
    if (n > s->ord_cap) {
        HS_TRY(grow((void **)&s->ord, n, sizeof *s->ord, err));
        s->ord_cap = n;
    }
    const int64_t *gid = s->gid;
    int64_t at[AGG_SMALL + 1] = {0};
    for (int64_t i = 0; i < n; i++)
        at[gid[i] + 1]++;
    for (int g = 0; g < AGG_SMALL; g++)
        at[g + 1] += at[g];
    memcpy(s->gstart, at, sizeof at);
    for (int64_t i = 0; i < n; i++)
        s->ord[at[gid[i]]++] = (int32_t)i;
    s->ord_ok = true;
    return HS_OK;
}

/* Aggregates one input batch into s (the operator or a worker). */
static hs_status consume(agg_op *s, const hs_batch *b, hs_error *err)
{
    /* a global aggregate fills group ids (all 0) only for the aggregates
     * update_global does not cover */
    bool global = s->n_groups == 0, ready = !global;
    hs_status st = HS_OK;
    s->ord_ok = false;
    if (!global)
        st = assign_groups(s, b, err);
    if (st == HS_OK && !global)
        st = order_small(s, b->n_rows, err);
    if (st == HS_OK)
        st = ensure_groups(s, s->n_total, err);
    for (int j = 0; j < s->n_aggs && st == HS_OK; j++) {
        if (s->aggs[j].same >= 0 || (global && agg_update_global(&s->aggs[j], b, &st, err)))
            continue;
        if (!ready && (st = assign_groups(s, b, err)) != HS_OK)
            break;
        ready = true;
        st = update_agg(s, &s->aggs[j], b, s->gid, err);
    }
    if (st == HS_OK)
        st = account(s, err);
    return st;
}

static void agg_clear(agg_op *s);

/* ---- parallel partial aggregation ---- */

/* Parallel when the pool allows and every aggregate merges by value. */
static bool can_parallel(const agg_op *s)
{
    const xo_ctx *ctx = s->op.ctx;
    if (!ctx || !ctx->pool || ctx->threads < 2 || agg_global_cheap(s))
        return false;
    int n_distinct = 0;
    for (int j = 0; j < s->n_aggs; j++) {
        if (s->aggs[j].a.fn == XO_AGG_STRING_AGG || s->aggs[j].a.fn == XO_AGG_ARRAY_AGG)
            return false;
        n_distinct += s->aggs[j].a.distinct;
    }
    /* under a small limit (a round of new groups could pass it) serially,
     * where spilling works; DISTINCT values are held by a worker's set,
     * its kept values and the operator's set, and the phase stops at a
     * quarter of the limit (consume_parallel) */
    int64_t per_row = 64 + 16 * s->n_groups;
    if (n_distinct)
        per_row += 96 * n_distinct + 32 * s->n_aggs;
    if ((s->n_groups > 0 || n_distinct) && ctx->mem_limit > 0 &&
        ctx->mem_limit / (n_distinct ? 4 : 2) < (int64_t)ctx->threads * XO_BATCH_ROWS * per_row)
        return false;
    return true;
}

static hs_status field_copy_to(hs_field *parent, const hs_field *f, hs_error *err);

static hs_status make_worker(const agg_op *s, agg_op **out, hs_error *err)
{
    agg_op *w = hs_calloc(1, sizeof *w);
    if (!w)
        return hs_err_nomem(err, 0);
    w->op.ctx = s->op.ctx;
    w->op.name = s->op.name;
    w->n_groups = s->n_groups;
    w->int_key = s->int_key;
    w->str_keys = s->str_keys;
    w->int_pair = s->int_pair;
    w->null_gid = -1;
    *out = w;
    w->aggs = hs_calloc((size_t)(s->n_aggs ? s->n_aggs : 1), sizeof *w->aggs);
    if (!w->aggs || hs_field_copy(&s->key_schema, &w->key_schema) != HS_OK)
        return hs_err_nomem(err, 0);
    w->n_aggs = s->n_aggs;
    for (int j = 0; j < s->n_aggs; j++) {
        agg_state *a = &w->aggs[j];
        a->a = s->aggs[j].a;
        a->same = s->aggs[j].same;
        a->a.sep = a->a.name = NULL;
        a->a.order = NULL;   /* (parallel workers never hold ordered aggregates) */
        a->a.n_order = 0;
        a->cls = s->aggs[j].cls;
        a->pvt = s->aggs[j].pvt;
        a->scale = s->aggs[j].scale;
        if (hs_field_copy(&s->aggs[j].store_schema, &a->store_schema) != HS_OK)
            return hs_err_nomem(err, 0);
        hs_field_init(&a->dschema, "", HS_TYPE_STRUCT, false);
        if (a->a.distinct) {
            a->dkeep = true;
            HS_TRY(field_copy_to(&a->dschema, &s->op.children[0]->schema.children[a->a.arg], err));
        }
    }
    if (s->n_groups == 0) {
        w->n_total = 1;
        HS_TRY(ensure_groups(w, 1, err));
    }
    return HS_OK;
}

/* A parallel round takes at least `threads` batches and, when they are
 * small (a selective filter or join below: TPC-H Q16's 1,200-row batches),
 * more of them up to AGG_ROUND_ROWS rows a thread or AGG_ROUND_BATCHES
 * batches a thread, so that the pool's start and wait of a round are paid
 * for thousands of rows, not a few hundred. */
#define AGG_ROUND_ROWS (XO_BATCH_ROWS / 2)
#define AGG_ROUND_BATCHES 8

typedef struct agg_job {
    agg_op *w;
    hs_batch *b[AGG_ROUND_BATCHES];
    int n;
} agg_job;

static hs_status agg_task(void *arg, hs_error *err)
{
    agg_job *j = arg;
    for (int i = 0; i < j->n; i++)
        HS_TRY(consume(j->w, j->b[i], err));
    return HS_OK;
}

/* DISTINCT aggregate a of s takes the values worker state b kept (each
 * the first of its worker group): aggregated again into s's groups
 * (mg: worker group -> group of s), through s's own seen set. */
static hs_status merge_distinct(agg_op *s, agg_state *a, agg_state *b, const int64_t *mg,
                                hs_error *err)
{
    int64_t n = (int64_t)HS_VEC_LEN(&b->dgid, int64_t);
    if (n == 0 || !b->dvals.b)
        return HS_OK;
    int64_t *g = hs_malloc((size_t)n * sizeof *g);
    hs_column **cols = hs_calloc((size_t)a->a.arg + 1, sizeof *cols);
    hs_status st = g && cols ? HS_OK : hs_err_nomem(err, 0);
    if (st == HS_OK) {
        const int64_t *wg = (const int64_t *)b->dgid.data;
        for (int64_t k = 0; k < n; k++)
            g[k] = mg[wg[k]];
        cols[a->a.arg] = b->dvals.b->cols[0];
        hs_batch view = {.n_rows = n, .n_cols = a->a.arg + 1, .cols = cols};
        st = update_agg(s, a, &view, g, err);
    }
    hs_free(g);
    hs_free(cols);
    return st;
}

/* The final merge of one integer group column (the input has ended):
 * worker w's groups are looked up, not inserted -- in s's map (the
 * adopted worker's groups), else in the maps of the workers merged before
 * it (done[0..nd), whose groups are groups done_mg[k][.] of s); a key in
 * none of them is a new group of s, appended without a map entry, since
 * no row comes to look it up again.  So s's map never grows to all the
 * groups (TPC-H Q18's subquery: 1.5M orders, the two workers' halves
 * nearly disjoint because lineitem is clustered by l_orderkey: the map of
 * 4M slots, its zeroed pages and 750K inserts are saved).  Fills s->gid
 * (group of w -> group of s) as assign_groups does. */
static hs_status assign_final(agg_op *s, const agg_op *w, agg_op *const *done,
                              int64_t *const *done_mg, int nd, hs_error *err)
{
    const hs_batch *b = w->keys.b;
    if (b->n_rows > s->gid_cap) {
        HS_TRY(grow((void **)&s->gid, b->n_rows, sizeof *s->gid, err));
        s->gid_cap = b->n_rows;
    }
    hs_buf fresh = {0};
    const hs_column *kc = b->cols[0];
    for (int64_t i = 0; i < b->n_rows; i++) {
        int64_t g = -1;
        if (!hs_col_is_valid(kc, i)) {
            g = s->null_gid;
            if (g < 0)
                s->null_gid = g = s->n_total++;   /* new: appended below */
            else {
                s->gid[i] = g;
                continue;
            }
        } else {
            bool big;
            uint64_t key = (uint64_t)xo_int_at(kc, i, &big), v;
            if (s->imap.count && hs_imap_get(&s->imap, key, &v))
                g = (int64_t)v;
            for (int k = 0; g < 0 && k < nd; k++)
                if (done[k]->imap.count && hs_imap_get(&done[k]->imap, key, &v))
                    g = done_mg[k][v];
            if (g >= 0) {
                s->gid[i] = g;
                continue;
            }
            g = s->n_total++;
        }
        s->gid[i] = g;
        if (HS_VEC_PUSH(&fresh, int64_t, i) != HS_OK) {
            hs_buf_free(&fresh);
            return hs_err_nomem(err, 0);
        }
    }
    hs_status st = HS_OK;
    if (fresh.len) {
        hs_batch view = {.schema = s->key_schema, .n_rows = b->n_rows, .n_cols = s->n_groups,
                         .cols = b->cols};
        st = xo_rows_append_take(&s->keys, s->op.ctx, s->op.name, &view, (int64_t *)fresh.data,
                                 (int64_t)HS_VEC_LEN(&fresh, int64_t), err);
    }
    hs_buf_free(&fresh);
    return st;
}

/* Folds worker w's groups into s: the worker's key rows are looked up as a
 * batch (new groups are appended to s; at the end of an integer-keyed
 * input by assign_final, done/done_mg/nd as there), then every state
 * merges (DISTINCT ones by merge_distinct). */
static hs_status merge_worker(agg_op *s, agg_op *w, agg_op *const *done,
                              int64_t *const *done_mg, int nd, bool final, hs_error *err)
{
    if (w->n_total == 0)
        return HS_OK;
    if (s->n_groups > 0) {
        if (!w->keys.b)
            return HS_OK;
        if (final)
            HS_TRY(assign_final(s, w, done, done_mg, nd, err));
        else
            HS_TRY(assign_groups(s, w->keys.b, err));
    } else {
        HS_TRY(assign_groups(s, &(hs_batch){.n_rows = w->n_total}, err));
    }
    HS_TRY(ensure_groups(s, s->n_total, err));
    const int64_t *mg = s->gid;   /* worker group g -> group mg[g] of s */
    for (int j = 0; j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j], *b = &w->aggs[j];
        if (a->same >= 0)
            continue;
        if (a->a.distinct) {
            HS_TRY(merge_distinct(s, a, b, mg, err));
            continue;
        }
        hs_buf take = {0};
        hs_status st = HS_OK;
        int64_t base = xo_rows_count(&a->store);
        for (int64_t g = 0; g < w->n_total && st == HS_OK; g++) {
            int64_t m = mg[g];
            a->cnt[m] += b->cnt[g];
            switch (a->a.fn) {
            case XO_AGG_SUM: case XO_AGG_AVG:
                if (a->pvt)
                    st = pv_agg_combine(&a->pv[m], &b->pv[g], err);
                else if (a->cls == ACC_FLOAT)
                    a->fsum[m] += b->fsum[g];
                else
                    st = add_int(a, m, b->isum[g], err);
                break;
            case XO_AGG_BOOL_AND: a->flag[m] &= b->flag[g]; break;
            case XO_AGG_BOOL_OR: a->flag[m] |= b->flag[g]; break;
            case XO_AGG_MIN: case XO_AGG_MAX: {
                if (b->best[g] < 0)
                    break;
                const hs_column *wc = b->store.b->cols[0];
                if (a->best[m] >= 0) {
                    int r = xo_val_cmp(wc, b->best[g], a->store.b->cols[0], a->best[m]);
                    if (!(a->a.fn == XO_AGG_MIN ? r < 0 : r > 0))
                        break;
                }
                a->best[m] = base + (int64_t)HS_VEC_LEN(&take, int64_t);
                if (HS_VEC_PUSH(&take, int64_t, b->best[g]) != HS_OK)
                    st = hs_err_nomem(err, 0);
                break;
            }
            default: break;
            }
        }
        if (st == HS_OK && take.len)
            st = xo_rows_append_take(&a->store, s->op.ctx, s->op.name, b->store.b,
                                     (int64_t *)take.data, (int64_t)HS_VEC_LEN(&take, int64_t), err);
        hs_buf_free(&take);
        HS_TRY(st);
    }
    return account(s, err);
}

/* s, still without groups, takes worker w's groups and states as its own
 * (swapped, so w frees what s had): the first merge costs nothing instead
 * of re-inserting every group of w (1.5M for TPC-H Q18's subquery). */
static void adopt_worker(agg_op *s, agg_op *w)
{
#define SWAP(x, y) do { __typeof__(x) t_ = (x); (x) = (y); (y) = t_; } while (0)
    SWAP(s->map, w->map);
    SWAP(s->map_key_bytes, w->map_key_bytes);
    SWAP(s->imap, w->imap);
    SWAP(s->null_gid, w->null_gid);
    SWAP(s->keys, w->keys);
    SWAP(s->n_total, w->n_total);
    SWAP(s->cap, w->cap);
    SWAP(s->accounted, w->accounted);   /* both reserved in the same ctx */
    SWAP(s->gid, w->gid);
    SWAP(s->gid_cap, w->gid_cap);
    SWAP(s->scratch, w->scratch);
    for (int j = 0; j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j], *b = &w->aggs[j];
        SWAP(a->cnt, b->cnt);
        SWAP(a->isum, b->isum);
        SWAP(a->fsum, b->fsum);
        SWAP(a->flag, b->flag);
        SWAP(a->pv, b->pv);
        SWAP(a->best, b->best);
        SWAP(a->tail, b->tail);
        SWAP(a->store, b->store);
        SWAP(a->nxt, b->nxt);
        SWAP(a->seen, b->seen);
        SWAP(a->seen_bytes, b->seen_bytes);
        SWAP(a->iseen, b->iseen);
    }
#undef SWAP
}

/* Aggregates on the workers until the end of input (*eof) or, with
 * groups, until half the memory limit is in use; then merges them: the
 * worker with the most groups is adopted (adopt_worker), the others are
 * folded in after the maps are sized for all their groups at once. */
static hs_status consume_parallel(agg_op *s, bool *eof_out, hs_error *err)
{
    xo_ctx *ctx = s->op.ctx;
    int k = ctx->threads;
    *eof_out = false;
    s->workers = hs_calloc((size_t)k, sizeof *s->workers);
    agg_job *jobs = hs_calloc((size_t)k, sizeof *jobs);
    hs_status st = s->workers && jobs ? HS_OK : hs_err_nomem(err, 0);
    if (st == HS_OK)
        s->n_workers = k;
    for (int i = 0; i < k && st == HS_OK; i++)
        st = make_worker(s, &s->workers[i], err);
    /* DISTINCT values are held twice until the merge (the workers' sets
     * and kept values, then the operator's set): stop at a quarter */
    bool distinct = false;
    for (int j = 0; j < s->n_aggs; j++)
        distinct |= s->aggs[j].a.distinct;
    int64_t stop = ctx->mem_limit / (distinct ? 4 : 2);
    bool eof = false;
    while (st == HS_OK && !eof) {
        if ((s->n_groups > 0 || distinct) && ctx->mem_limit > 0 &&
            atomic_load(&ctx->mem_used) > stop)
            break;
        int n = 0, nb = 0;   /* jobs with batches; batches */
        int64_t rows = 0;
        for (int i = 0; i < k; i++)
            jobs[i] = (agg_job){.w = s->workers[i]};
        while ((nb < k || (rows < (int64_t)k * AGG_ROUND_ROWS && nb < k * AGG_ROUND_BATCHES)) &&
               st == HS_OK) {
            hs_batch *b;
            st = xo_next(s->op.children[0], &b, err);
            if (st != HS_OK || !b) {
                eof = true;
                break;
            }
            agg_job *j = &jobs[nb % k];
            j->b[j->n++] = b;
            rows += b->n_rows;
            nb++;
        }
        n = nb < k ? nb : k;
        if (st == HS_OK && n == 1) {
            st = agg_task(&jobs[0], err);
        } else if (st == HS_OK && n > 1) {
            hs_group *g;
            st = hs_group_create(ctx->pool, &g, err);
            hs_status sub = HS_OK;
            for (int i = 0; i < n && st == HS_OK && sub == HS_OK; i++)
                sub = hs_group_submit(g, agg_task, &jobs[i]);
            if (st == HS_OK) {
                st = hs_group_wait(g, err);
                hs_group_destroy(g);
                if (st == HS_OK && sub != HS_OK)
                    st = hs_err_nomem(err, 0);
            }
        }
        for (int i = 0; i < k; i++) {
            for (int m = 0; m < jobs[i].n; m++)
                hs_batch_free(jobs[i].b[m]);
            jobs[i].n = 0;
        }
    }
    hs_free(jobs);
    *eof_out = eof;
    if (st == HS_OK && s->n_groups > 0 && s->n_total == 0 && s->cap == 0) {
        int big = 0;
        int64_t more = 0;
        for (int i = 0; i < s->n_workers; i++) {
            more += s->workers[i]->n_total;
            if (s->workers[i]->n_total > s->workers[big]->n_total)
                big = i;
        }
        adopt_worker(s, s->workers[big]);
        more -= s->n_total;
        /* at most `more` new groups: one resize now, none while merging
         * (none at all at the end of the input: assign_final) */
        if (s->int_key && !eof && hs_imap_reserve(&s->imap, s->imap.count + (size_t)more) != HS_OK)
            st = hs_err_nomem(err, 0);
        if (st == HS_OK)
            st = ensure_groups(s, s->n_total + more, err);
        if (st == HS_OK)
            st = account(s, err);
    }
    /* assign_final: the workers merged so far stay (their maps are looked
     * up) with their group numbers in s */
    bool final = eof && s->int_key && s->n_groups == 1;
    agg_op **done = final ? hs_calloc((size_t)s->n_workers, sizeof *done) : NULL;
    int64_t **done_mg = final ? hs_calloc((size_t)s->n_workers, sizeof *done_mg) : NULL;
    int nd = 0;
    if (final && (!done || !done_mg))
        st = hs_err_nomem(err, 0);
    for (int i = 0; i < s->n_workers && st == HS_OK; i++) {
        agg_op *w = s->workers[i];
        st = merge_worker(s, w, done, done_mg, nd, final, err);
        s->workers[i] = NULL;
        if (final && st == HS_OK && w->n_total > 0 && w->keys.b) {
            int64_t *mg = hs_malloc((size_t)w->n_total * sizeof *mg);
            if (mg) {
                memcpy(mg, s->gid, (size_t)w->n_total * sizeof *mg);
                done[nd] = w;
                done_mg[nd++] = mg;
                continue;
            }
            st = hs_err_nomem(err, 0);
        }
        agg_clear(w);
        hs_free(w);
    }
    for (int k = 0; k < nd; k++) {
        agg_clear(done[k]);
        hs_free(done[k]);
        hs_free(done_mg[k]);
    }
    hs_free(done);
    hs_free(done_mg);
    return st;
}


/* ---- spilling (see top) ---- */

static void agg_release_state(agg_op *s);

/* Bytes one more group costs in the state arrays (as account counts). */
static int64_t group_bytes(const agg_op *s)
{
    int64_t per_group = 8;
    for (int j = 0; j < s->n_aggs; j++) {
        const agg_state *a = &s->aggs[j];
        per_group += 8 + (a->isum ? 16 : 0) + (a->fsum ? 8 : 0) + (a->flag ? 1 : 0) +
                     (a->best ? 16 : 0) + (a->pv ? (int64_t)sizeof(pv_agg) + 8 * 16 : 0);
    }
    return per_group;
}

/* True when b could take the operator past the limit: all its rows new
 * groups, what is held now doubling (maps, arrays, key rows), and b's
 * bytes again for the values stored. */
static bool agg_should_spill(const agg_op *s, const hs_batch *b)
{
    const xo_ctx *ctx = s->op.ctx;
    if (!ctx || ctx->mem_limit <= 0 || s->n_groups == 0 || s->n_total == 0 ||
        s->level >= AGG_MAX_LEVEL)
        return false;
    int64_t need = s->accounted + s->keys.bytes + xo_batch_bytes(b) +
                   b->n_rows * (group_bytes(s) + 2 * (int64_t)sizeof(hs_map_slot));
    /* states that keep growing after spilling starts (DISTINCT sets, the
     * values of string_agg/array_agg): keep half the limit for them */
    int64_t limit = ctx->mem_limit;
    /* string_agg/array_agg ... ORDER BY sort their stored values at the
     * end: 88 bytes a value (xo_sort_perm) */
    for (int j = 0; j < s->n_aggs; j++)
        if (s->aggs[j].a.n_order > 0)
            need += (xo_rows_count(&s->aggs[j].store) + b->n_rows) * 88;
    for (int j = 0; j < s->n_aggs; j++)
        if (s->aggs[j].a.distinct || s->aggs[j].a.fn == XO_AGG_STRING_AGG ||
            s->aggs[j].a.fn == XO_AGG_ARRAY_AGG) {
            limit /= 2;
            break;
        }
    return atomic_load(&((xo_ctx *)ctx)->mem_used) + need > limit;
}

/* Writes rows idx[0..n) of b to partition p. */
static hs_status spill_rows(agg_op *s, const hs_batch *b, int p, const int64_t *idx, int64_t n,
                            hs_error *err)
{
    hs_batch *t;
    HS_TRY(xo_batch_take(&s->op.children[0]->schema, b, idx, n, &t, err));
    int64_t off;
    hs_status st = xo_spill_write(s->op.ctx, &s->sp, t, &off, err);
    hs_batch_free(t);
    HS_TRY(st);
    if (HS_VEC_PUSH(&s->part[p], int64_t, off) != HS_OK)
        return hs_err_nomem(err, 0);
    s->spilled_rows += n;
    return HS_OK;
}

/* Spilling: rows of groups in memory are aggregated, the others go to
 * their partitions. */
static hs_status consume_spilling(agg_op *s, const hs_batch *b, hs_error *err)
{
    s->probe_only = true;
    hs_status st = assign_groups(s, b, err);
    s->probe_only = false;
    HS_TRY(st);
    int64_t n = b->n_rows, n_in = 0;
    int64_t *idx = hs_malloc((size_t)n * sizeof *idx);
    int64_t *cnt = hs_calloc(AGG_PARTS + 1, sizeof *cnt);
    uint8_t *pof = hs_malloc((size_t)n);
    if (!idx || !cnt || !pof)
        st = hs_err_nomem(err, 0);
    /* partition of each missing row (AGG_PARTS: in memory) */
    uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(s->level + 1);
    for (int64_t i = 0; st == HS_OK && i < n; i++) {
        if (s->gid[i] >= 0) {
            pof[i] = AGG_PARTS;
            n_in++;
            continue;
        }
        hs_buf_reset(&s->kb);
        for (int c = 0; c < s->n_groups && st == HS_OK; c++)
            if (xo_key_append(&s->kb, b->cols[c], i) != HS_OK)
                st = hs_err_nomem(err, 0);
        pof[i] = (uint8_t)(hs_xxh64(s->kb.data, s->kb.len, seed) % AGG_PARTS);
    }
    for (int64_t i = 0; st == HS_OK && i < n; i++)
        cnt[pof[i]]++;
    /* each partition's rows in input order: counting sort by partition */
    int64_t start[AGG_PARTS + 1], at[AGG_PARTS + 1];
    for (int p = 0, acc = 0; st == HS_OK && p <= AGG_PARTS; p++) {
        start[p] = at[p] = acc;
        acc += (int)cnt[p];
    }
    for (int64_t i = 0; st == HS_OK && i < n; i++)
        idx[at[pof[i]]++] = i;
    for (int p = 0; st == HS_OK && p < AGG_PARTS; p++)
        if (cnt[p] > 0)
            st = spill_rows(s, b, p, idx + start[p], cnt[p], err);
    if (st == HS_OK && n_in == n) {
        st = consume(s, b, err);
    } else if (st == HS_OK && n_in > 0) {
        hs_batch *t;
        st = xo_batch_take(&b->schema, b, idx + start[AGG_PARTS], n_in, &t, err);
        if (st == HS_OK) {
            st = consume(s, t, err);
            hs_batch_free(t);
        }
    }
    hs_free(idx);
    hs_free(cnt);
    hs_free(pof);
    return st;
}

/* Serial input under a memory limit: b in slices small enough that one
 * slice of new groups takes at most a quarter of the limit, each slice
 * aggregated, or spilled where that could pass the limit. */
static hs_status consume_limited(agg_op *s, const hs_batch *b, hs_error *err)
{
    const xo_ctx *ctx = s->op.ctx;
    int64_t piece = b->n_rows;
    if (ctx && ctx->mem_limit > 0 && s->n_groups > 0 && b->n_rows > 1) {
        int64_t row = xo_batch_bytes(b) / b->n_rows + 2 * (group_bytes(s) + 32);
        int64_t fit = ctx->mem_limit / 4 / row;
        if (fit < piece)
            piece = fit < 1 ? 1 : fit;
    }
    for (int64_t at = 0; at < b->n_rows; at += piece) {
        int64_t n = b->n_rows - at < piece ? b->n_rows - at : piece;
        hs_batch *part = NULL;
        const hs_batch *src = b;
        if (n < b->n_rows) {
            HS_TRY(xo_batch_rows(b, at, n, &part, err));
            src = part;
        }
        if (!s->spilling && agg_should_spill(s, src))
            s->spilling = true;
        hs_status st = s->spilling ? consume_spilling(s, src, err) : consume(s, src, err);
        hs_batch_free(part);
        HS_TRY(st);
    }
    return HS_OK;
}

/* The reader of one partition's blocks: a source operator. */
typedef struct part_reader {
    xo_op op;
    const xo_spill *sp;    /* the aggregate's file (borrowed) */
    int64_t *offs;
    int64_t n, next;
} part_reader;

static hs_status reader_next(xo_op *op, hs_batch **out, hs_error *err)
{
    part_reader *r = (part_reader *)op;
    HS_TRY(xo_check_cancel(op->ctx, err));
    if (r->next >= r->n)
        return HS_OK;
    return xo_spill_read(r->sp, &op->schema, r->offs[r->next++], out, NULL, err);
}

static void reader_destroy(xo_op *op)
{
    hs_free(((part_reader *)op)->offs);
}

/* s->sub = a HashAggregate like s over partition p. */
static hs_status open_partition(agg_op *s, int p, hs_error *err)
{
    xo_op *rop;
    HS_TRY(xo_op_alloc(sizeof(part_reader), s->op.ctx, "SpillRead", 0, NULL, &rop, err));
    part_reader *r = (part_reader *)rop;
    rop->next = reader_next;
    rop->destroy = reader_destroy;
    r->sp = &s->sp;
    r->n = (int64_t)HS_VEC_LEN(&s->part[p], int64_t);
    r->offs = (int64_t *)hs_buf_detach(&s->part[p], NULL);
    hs_field_clear(&rop->schema);
    xo_agg *aggs = hs_calloc((size_t)(s->n_aggs ? s->n_aggs : 1), sizeof *aggs);
    if (!aggs || hs_field_copy(&s->op.children[0]->schema, &rop->schema) != HS_OK) {
        if (!rop->schema.name)
            hs_field_init(&rop->schema, "", HS_TYPE_STRUCT, false);
        hs_free(aggs);
        xo_free(rop);
        return hs_err_nomem(err, 0);
    }
    for (int j = 0; j < s->n_aggs; j++)
        aggs[j] = s->aggs[j].a;
    xo_op *sub;
    hs_status st = xo_hashagg(rop, s->n_groups, s->n_aggs, aggs, &sub, err);
    hs_free(aggs);
    HS_TRY(st);
    ((agg_op *)sub)->level = s->level + 1;
    s->sub = sub;
    return HS_OK;
}

/* After the in-memory groups: the partitions' groups, one partition at a
 * time. */
static hs_status next_spilled(agg_op *s, hs_batch **out, hs_error *err)
{
    for (;;) {
        if (s->sub) {
            HS_TRY(xo_next(s->sub, out, err));
            if (*out)
                return HS_OK;
            agg_op *sa = (agg_op *)s->sub;
            xo_op_held(&s->op, s->sub->mem_peak);
            s->sub_spilled += sa->spilled_rows + sa->sub_spilled;
            xo_free(s->sub);
            s->sub = NULL;
        }
        if (s->next_part >= AGG_PARTS) {
            xo_spill_close(&s->sp);
            return HS_OK;
        }
        int p = s->next_part++;
        if (s->part[p].len)
            HS_TRY(open_partition(s, p, err));
    }
}

static hs_status agg_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const agg_op *s = (const agg_op *)op;
    if (s->counted &&
        hs_buf_puts(out, s->counted == 1 ? "count(*) from the data files' record counts\n"
                                         : "count(*) from the index bitmaps' cardinalities\n") != HS_OK)
        return hs_err_nomem(err, 0);
    if (!s->spilling)
        return HS_OK;
    if (hs_buf_printf(out, "spilled: %lld rows to %d partitions (%lld bytes), %lld rows again "
                      "in deeper levels", (long long)s->spilled_rows, AGG_PARTS,
                      (long long)s->sp.written, (long long)s->sub_spilled) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

static hs_status agg_next(xo_op *op, hs_batch **out, hs_error *err)
{
    agg_op *s = (agg_op *)op;
    if (!s->done && !s->par_tried && !s->count_tried) {
        bool counted;
        s->count_tried = true;
        HS_TRY(agg_count_known(s, &counted, err));
        if (counted) {
            s->done = s->par_tried = true;
            HS_TRY(agg_finish(s, err));
        }
    }
    if (!s->done && !s->par_tried && can_parallel(s)) {
        s->par_tried = true;
        bool eof;
        HS_TRY(consume_parallel(s, &eof, err));
        if (eof) {
            s->done = true;
            HS_TRY(agg_finish(s, err));
        }
    }
    while (!s->done) {
        hs_batch *b;
        HS_TRY(xo_next(op->children[0], &b, err));
        if (!b) {
            s->done = true;
            HS_TRY(agg_finish(s, err));
            break;
        }
        hs_status st = consume_limited(s, b, err);
        hs_batch_free(b);
        HS_TRY(st);
    }
    HS_TRY(xo_check_cancel(op->ctx, err));
    if (!s->result || s->emitted >= s->result->n_rows) {
        if (!s->spilling)
            return HS_OK;
        if (s->cap) {   /* the in-memory groups are out: free them for the partitions */
            hs_batch_free(s->result);
            s->result = NULL;
            agg_release_state(s);
        }
        return next_spilled(s, out, err);
    }
    int64_t n = s->result->n_rows - s->emitted;
    if (n > XO_BATCH_ROWS)
        n = XO_BATCH_ROWS;
    if (s->emitted == 0 && n == s->result->n_rows) {
        *out = s->result;
        s->result = NULL;
        return HS_OK;
    }
    int64_t *idx = hs_malloc((size_t)n * sizeof *idx);
    if (!idx)
        return hs_err_nomem(err, 0);
    for (int64_t i = 0; i < n; i++)
        idx[i] = s->emitted + i;
    hs_status st = xo_batch_take(&op->schema, s->result, idx, n, out, err);
    hs_free(idx);
    s->emitted += n;
    return st;
}

static void agg_destroy(xo_op *op)
{
    agg_op *s = (agg_op *)op;
    for (int i = 0; i < s->n_workers; i++) {
        if (s->workers[i])
            agg_clear(s->workers[i]);
        hs_free(s->workers[i]);
    }
    hs_free(s->workers);
    agg_clear(s);
}

/* Frees the groups and states (not the aggregates' descriptions). */
static void agg_release_state(agg_op *s)
{
    xo_op *op = &s->op;
    for (int j = 0; s->aggs && j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j];
        for (int64_t g = 0; a->pv && g < s->cap; g++)
            pv_agg_free(&a->pv[g]);
        hs_free(a->pv);
        a->pv = NULL;
        hs_free(a->cnt);
        hs_free(a->isum);
        hs_free(a->fsum);
        hs_free(a->flag);
        hs_free(a->best);
        hs_free(a->tail);
        a->cnt = a->best = a->tail = NULL;
        a->isum = NULL;
        a->fsum = NULL;
        a->flag = NULL;
        xo_rows_free(&a->store, op->ctx);
        hs_buf_free(&a->nxt);
        hs_map_free(&a->seen);
        hs_imap_free(&a->iseen);
        a->seen_bytes = 0;
        xo_rows_free(&a->dvals, op->ctx);
        hs_buf_free(&a->dgid);
    }
    hs_map_free(&s->map);
    hs_imap_free(&s->imap);
    s->map_key_bytes = 0;
    xo_rows_free(&s->keys, op->ctx);
    hs_free(s->gid);
    hs_free(s->pk);
    hs_free(s->pk_used);
    s->pk = NULL;
    s->pk_used = NULL;
    s->pk_cap = 0;
    hs_free(s->ord);
    s->ord = NULL;
    s->ord_cap = 0;
    s->ord_ok = false;
    hs_free(s->scratch);
    s->gid = s->scratch = NULL;
    s->gid_cap = s->cap = s->n_total = 0;
    xo_mem_release(op->ctx, s->accounted);
    s->accounted = 0;
}

/* Frees what s holds (the operator's state or a worker's). */
static void agg_clear(agg_op *s)
{
    agg_release_state(s);
    for (int j = 0; s->aggs && j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j];
        hs_free((char *)a->a.sep);
        hs_free((char *)a->a.name);
        hs_free((void *)a->a.order);
        hs_free(a->okeys);
        hs_field_clear(&a->store_schema);
        hs_field_clear(&a->dschema);
    }
    hs_free(s->aggs);
    hs_field_clear(&s->key_schema);
    hs_buf_free(&s->kb);
    hs_batch_free(s->result);
    xo_free(s->sub);
    for (int p = 0; p < AGG_PARTS; p++)
        hs_buf_free(&s->part[p]);
    xo_spill_close(&s->sp);
}

static hs_status field_copy_to(hs_field *parent, const hs_field *f, hs_error *err)
{
    hs_field c;
    if (hs_field_copy(f, &c) != HS_OK)
        return hs_err_nomem(err, 0);
    if (hs_field_add_child(parent, &c) != HS_OK) {
        hs_field_clear(&c);
        return hs_err_nomem(err, 0);
    }
    return HS_OK;
}

/* Aggregates that read another's state (agg_state.same): count, sum and
 * avg of one argument keep the same non-null count, and sum and avg the
 * same sum, so a repeated sum(x), the sum(x) and count(x) that avg(x)
 * plans into next to a sum(x) (TPC-H Q1: 11 aggregates, 6 states), and a
 * repeated count(*) are updated once.  Not DISTINCT, not ordered, not
 * sums of vectors (pgvector's accumulators). */
static bool sums_like(const agg_state *a)
{
    return !a->a.distinct && a->a.n_order == 0 && !a->pvt &&
           (a->a.fn == XO_AGG_SUM || a->a.fn == XO_AGG_AVG || a->a.fn == XO_AGG_COUNT ||
            a->a.fn == XO_AGG_COUNT_STAR);
}

static void share_states(agg_op *s)
{
    for (int j = 0; j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j];
        if (!sums_like(a))
            continue;
        bool star = a->a.fn == XO_AGG_COUNT_STAR, count = a->a.fn == XO_AGG_COUNT;
        int pick = -1;
        for (int k = 0; k < s->n_aggs; k++) {
            const agg_state *b = &s->aggs[k];
            if (k == j || b->same >= 0 || !sums_like(b))
                continue;
            bool b_sum = b->a.fn == XO_AGG_SUM || b->a.fn == XO_AGG_AVG;
            bool ok;
            if (star)
                ok = b->a.fn == XO_AGG_COUNT_STAR && k < j;
            else if (b->a.fn == XO_AGG_COUNT_STAR || b->a.arg != a->a.arg)
                ok = false;
            else if (count)   /* any sum of x counts x; else an earlier count(x) */
                ok = b_sum || k < j;
            else
                ok = b_sum && k < j && b->cls == a->cls;
            /* a count prefers a sum's state: the count's own can then go */
            if (ok && (pick < 0 || (b_sum && s->aggs[pick].a.fn == XO_AGG_COUNT)))
                pick = k;
        }
        a->same = pick;
    }
    /* a count(x) chosen as a source before a sum(x) took it over */
    for (int j = 0; j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j];
        if (a->same >= 0 && s->aggs[a->same].same >= 0)
            a->same = s->aggs[a->same].same;
    }
}

static hs_status agg_setup(agg_op *s, const xo_agg *aggs, hs_buf *d, hs_error *err)
{
    const hs_field *in = &s->op.children[0]->schema;
    hs_field_init(&s->key_schema, "", HS_TYPE_STRUCT, false);
    if (s->n_groups < 0 || s->n_groups > in->n_children)
        return hs_err_set(err, HS_INVALID, "HashAggregate: %d group columns but the input has %d",
                          s->n_groups, in->n_children);
    for (int c = 0; c < s->n_groups; c++) {
        HS_TRY(field_copy_to(&s->key_schema, &in->children[c], err));
        HS_TRY(field_copy_to(&s->op.schema, &in->children[c], err));
        if (hs_buf_printf(d, "%s#%d", c ? ", " : "groups: ", c + 1) != HS_OK)
            return hs_err_nomem(err, 0);
    }
    for (int j = 0; j < s->n_aggs; j++) {
        agg_state *a = &s->aggs[j];
        a->a = aggs[j];
        a->same = -1;
        a->a.sep = NULL;
        a->a.name = NULL;
        hs_field_init(&a->store_schema, "", HS_TYPE_STRUCT, false);
        const hs_field *arg = NULL;
        if (aggs[j].fn != XO_AGG_COUNT_STAR) {
            if (aggs[j].arg < 0 || aggs[j].arg >= in->n_children)
                return hs_err_set(err, HS_INVALID, "HashAggregate: %s argument column %d out of range",
                                  fn_name(aggs[j].fn), aggs[j].arg);
            arg = &in->children[aggs[j].arg];
            a->cls = class_of(arg->type);
            if (aggs[j].fn == XO_AGG_SUM || aggs[j].fn == XO_AGG_AVG)
                a->pvt = pv_of(arg);
            a->scale = arg->type == HS_TYPE_DECIMAL128 ? arg->scale : 0;
        }
        if ((aggs[j].sep && !(a->a.sep = hs_strdup(aggs[j].sep))) ||
            (aggs[j].name && !(a->a.name = hs_strdup(aggs[j].name))))
            return hs_err_nomem(err, 0);
        if (aggs[j].fn != XO_AGG_STRING_AGG)
            a->a.sep_col = -1;
        else if (a->a.sep_col >= in->n_children ||
                 (a->a.sep_col >= 0 && in->children[a->a.sep_col].type != arg->type))
            return hs_err_set(err, HS_INVALID, "string_agg: separator column %d is not of %s",
                              a->a.sep_col, hs_type_name(arg->type));
        hs_field rf;
        HS_TRY(result_field(&a->a, arg, &rf, err));
        if (!rf.name || hs_field_add_child(&s->op.schema, &rf) != HS_OK) {
            hs_field_clear(&rf);
            return hs_err_nomem(err, 0);
        }
        a->a.order = NULL;
        if (aggs[j].fn != XO_AGG_STRING_AGG && aggs[j].fn != XO_AGG_ARRAY_AGG)
            a->a.n_order = 0;
        if (a->a.n_order < 0 || a->a.n_order > XO_AGG_MAX_ORDER)
            return hs_err_set(err, HS_UNSUPPORTED, "%s: %d ORDER BY keys (at most %d)",
                              fn_name(a->a.fn), a->a.n_order, XO_AGG_MAX_ORDER);
        if (arg && (a->a.fn == XO_AGG_MIN || a->a.fn == XO_AGG_MAX ||
                    a->a.fn == XO_AGG_STRING_AGG || a->a.fn == XO_AGG_ARRAY_AGG)) {
            HS_TRY(field_copy_to(&a->store_schema, arg, err));
            if (a->a.sep_col >= 0)
                HS_TRY(field_copy_to(&a->store_schema, &in->children[a->a.sep_col], err));
            a->first_ocol = a->store_schema.n_children;
            if (a->a.n_order > 0 && !(a->okeys = hs_calloc((size_t)a->a.n_order, sizeof *a->okeys)))
                return hs_err_nomem(err, 0);
            for (int k = 0; k < a->a.n_order; k++) {
                int oc = aggs[j].order[k].col;
                if (oc < 0 || oc >= in->n_children)
                    return hs_err_set(err, HS_INVALID, "%s: ORDER BY column %d out of range",
                                      fn_name(a->a.fn), oc);
                a->okeys[k] = aggs[j].order[k];
                a->okeys[k].col = a->first_ocol + k;
                HS_TRY(field_copy_to(&a->store_schema, &in->children[oc], err));
            }
            /* the view of a batch reads the child's columns at these positions */
            if (a->a.n_order > 0) {
                xo_sort_key *copy = hs_calloc((size_t)a->a.n_order, sizeof *copy);
                if (!copy)
                    return hs_err_nomem(err, 0);
                memcpy(copy, aggs[j].order, (size_t)a->a.n_order * sizeof *copy);
                a->a.order = copy;
            }
        }
        hs_status st;
        if (!arg)
            st = hs_buf_printf(d, "%scount(*)", j ? ", " : (s->n_groups ? "; aggs: " : "aggs: "));
        else
            st = hs_buf_printf(d, "%s%s(%s#%d)", j ? ", " : (s->n_groups ? "; aggs: " : "aggs: "),
                               fn_name(a->a.fn), a->a.distinct ? "DISTINCT " : "", a->a.arg + 1);
        if (st != HS_OK)
            return hs_err_nomem(err, 0);
    }
    share_states(s);
    int n_own = 0;
    for (int j = 0; j < s->n_aggs; j++)
        n_own += s->aggs[j].same < 0;
    if (n_own < s->n_aggs && hs_buf_printf(d, " (%d state%s)", n_own, n_own == 1 ? "" : "s") != HS_OK)
        return hs_err_nomem(err, 0);
    xo_schema_renumber(&s->op.schema);
    s->null_gid = -1;
    s->int_key = s->n_groups == 1 && xo_is_int_type(in->children[0].type);
    s->str_keys = s->n_groups > 0 && s->n_groups <= 8;
    for (int c = 0; c < s->n_groups; c++)
        s->str_keys &= in->children[c].type == HS_TYPE_STRING || in->children[c].type == HS_TYPE_BINARY;
    s->int_pair = s->n_groups == 2;
    for (int c = 0; c < s->n_groups; c++)
        s->int_pair &= xo_is_int_type(in->children[c].type) && in->children[c].type != HS_TYPE_UINT64;
    if (s->n_groups == 0) {
        s->n_total = 1;
        HS_TRY(ensure_groups(s, 1, err));
    }
    return HS_OK;
}

/* ---- DISTINCT aggregates through Distinct (see the top) ---- */

/* Pick: columns cols[0..n) of the child's batches (moved; a column picked
 * twice is copied). */
typedef struct pick_op {
    xo_op op;
    int n;
    int *cols;
} pick_op;

/* Runtime join filters (op.h) through the grouping operators: a filter
 * on a group column drops whole groups, which is the same as dropping
 * their input rows first, so it passes to the child's column (Distinct:
 * every column is a group column; Pick: the column it picks).  TPC-H
 * Q17's and Q20's aggregates over lineitem grouped by part keys. */
static bool agg_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    const agg_op *s = (const agg_op *)op;
    if (col >= s->n_groups) {
        hs_keyfilter_free(kf);
        return false;
    }
    return xo_push_keyfilter(op->children[0], col, kf);
}

static bool pick_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    const pick_op *p = (const pick_op *)op;
    return xo_push_keyfilter(op->children[0], p->cols[col], kf);
}

static hs_status pick_next(xo_op *op, hs_batch **out, hs_error *err)
{
    pick_op *p = (pick_op *)op;
    *out = NULL;
    hs_batch *b;
    HS_TRY(xo_next(op->children[0], &b, err));
    if (!b)
        return HS_OK;
    hs_column **cols = hs_calloc((size_t)p->n, sizeof *cols);
    hs_status st = cols ? HS_OK : hs_err_nomem(err, 0);
    for (int i = 0; i < p->n && st == HS_OK; i++) {
        int c = p->cols[i], first = i;
        for (int j = 0; j < i; j++)
            if (p->cols[j] == c) {
                first = j;
                break;
            }
        if (first == i) {
            cols[i] = b->cols[c];
            b->cols[c] = NULL;
        } else {
            st = hs_col_slice(cols[first], 0, b->n_rows, &cols[i], err);
        }
    }
    int64_t n = b->n_rows;
    hs_batch_free(b);
    if (st == HS_OK) {
        st = xo_batch_wrap(&op->schema, p->n, cols, n, out, err);   /* takes the columns */
    } else if (cols) {
        for (int i = 0; i < p->n; i++)
            hs_col_free(cols[i]);
    }
    hs_free(cols);
    return st;
}

static void pick_destroy(xo_op *op)
{
    hs_free(((pick_op *)op)->cols);
}

/* True when every aggregate is DISTINCT over one argument column and
 * insensitive to repeated values. */
static bool distinct_only(const xo_op *child, int n_groups, int n_aggs, const xo_agg *aggs)
{
    const hs_field *cs = &child->schema;
    const xo_ctx *ctx = child->ctx;
    if (!ctx || ctx->mem_limit <= 0 || n_aggs < 1 || n_groups < 0 || n_groups > cs->n_children)
        return false;
    int arg = aggs[0].arg;
    if (arg < 0 || arg >= cs->n_children)
        return false;
    hs_type t = cs->children[arg].type;
    if (t == HS_TYPE_LIST || t == HS_TYPE_FIXED_LIST || t == HS_TYPE_MAP || t == HS_TYPE_STRUCT)
        return false;
    for (int j = 0; j < n_aggs; j++) {
        xo_agg_fn f = aggs[j].fn;
        if (!aggs[j].distinct || aggs[j].arg != arg || aggs[j].n_order > 0 ||
            (f != XO_AGG_COUNT && f != XO_AGG_SUM && f != XO_AGG_AVG && f != XO_AGG_MIN &&
             f != XO_AGG_MAX && f != XO_AGG_BOOL_AND && f != XO_AGG_BOOL_OR))
            return false;
    }
    return true;
}

static hs_status agg_make(xo_op *child, int n_groups, int n_aggs, const xo_agg *aggs,
                          xo_op **out, hs_error *err);

/* The aggregates of distinct_only over Distinct(group columns, argument):
 * both spill, so the DISTINCT sets no longer grow inside the aggregate. */

static hs_status agg_via_distinct(xo_op *child, int n_groups, int n_aggs, const xo_agg *aggs,
                                  xo_op **out, hs_error *err)
{
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(pick_op), child->ctx, "Pick", 1, &child, &op, err));
    pick_op *p = (pick_op *)op;
    op->next = pick_next;
    op->destroy = pick_destroy;
    op->push_keyfilter = pick_push_keyfilter;
    p->n = n_groups + 1;
    p->cols = hs_calloc((size_t)p->n, sizeof *p->cols);
    xo_agg *a2 = hs_calloc((size_t)n_aggs, sizeof *a2);
    hs_status st = p->cols && a2 ? HS_OK : hs_err_nomem(err, 0);
    hs_buf d = {0};
    for (int i = 0; i < p->n && st == HS_OK; i++) {
        int c = i < n_groups ? i : aggs[0].arg;
        p->cols[i] = c;
        hs_field f;
        if (hs_field_copy(&child->schema.children[c], &f) != HS_OK)
            st = hs_err_nomem(err, 0);
        else if (hs_field_add_child(&op->schema, &f) != HS_OK) {
            hs_field_clear(&f);
            st = hs_err_nomem(err, 0);
        }
        if (st == HS_OK && hs_buf_printf(&d, "%s#%d", i ? ", " : "", c + 1) != HS_OK)
            st = hs_err_nomem(err, 0);
    }
    if (st == HS_OK) {
        xo_schema_renumber(&op->schema);
        op->detail = (char *)hs_buf_detach(&d, NULL);
    }
    hs_buf_free(&d);
    xo_op *dop = NULL;
    if (st == HS_OK) {
        st = xo_distinct(op, &dop, err);
        op = NULL;   /* owned by dop, or freed */
        if (st == HS_OK)
            xo_distinct_set_bulk(dop);
    }
    for (int j = 0; j < n_aggs && st == HS_OK; j++) {
        a2[j] = aggs[j];
        a2[j].distinct = false;
        a2[j].arg = n_groups;
    }
    if (st == HS_OK) {
        st = agg_make(dop, n_groups, n_aggs, a2, out, err);
        dop = NULL;
    }
    xo_free(op);
    xo_free(dop);
    hs_free(a2);
    return st;
}

hs_status xo_hashagg(xo_op *child, int n_groups, int n_aggs, const xo_agg *aggs, xo_op **out,
                     hs_error *err)
{
    *out = NULL;
    if (distinct_only(child, n_groups, n_aggs, aggs))
        return agg_via_distinct(child, n_groups, n_aggs, aggs, out, err);
    return agg_make(child, n_groups, n_aggs, aggs, out, err);
}

static hs_status agg_make(xo_op *child, int n_groups, int n_aggs, const xo_agg *aggs,
                          xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(agg_op), child->ctx, "HashAggregate", 1, &child, &op, err));
    agg_op *s = (agg_op *)op;
    op->next = agg_next;
    op->destroy = agg_destroy;
    op->explain_extra = agg_extra;
    op->push_keyfilter = agg_push_keyfilter;
    s->n_groups = n_groups;
    s->aggs = hs_calloc((size_t)(n_aggs > 0 ? n_aggs : 1), sizeof *s->aggs);
    if (!s->aggs) {
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    s->n_aggs = n_aggs;
    hs_buf d = {0};
    hs_status st = agg_setup(s, aggs, &d, err);
    if (st != HS_OK) {
        hs_buf_free(&d);
        xo_free(op);
        return st;
    }
    op->detail = d.len ? (char *)hs_buf_detach(&d, NULL) : NULL;
    hs_buf_free(&d);
    *out = op;
    return HS_OK;
}
