/*
 * exec/distinct.c - Distinct: each row whose key (all its columns) was not
 * seen before, in input order.
 *
 * A row is emitted the first time its key (all columns)
 * is seen.  With ctx->pool and threads > 1 the seen set is split in
 * `threads` sets by a hash of the key, and batches go `threads` at a
 * time: their keys are encoded on the pool (one task per batch), then
 * each set takes its keys of all of them in input order (one task per
 * set: no locks, and the first of equal keys is still the one kept); the
 * kept rows of each batch come out in input order.  Packed keys: under an
 * aggregate (bulk: Distinct(group columns, argument)) whose last column is
 * an integer, a key whose value is a non-null integer within int32 is the
 * pair (prefix id, value), one 64-bit key of an hs_imap (pairs), where the
 * prefix id numbers the row keys of the other columns in an hs_map (pfx)
 * that a run of rows with the same prefix looks up once (TPC-H Q16:
 * (p_brand, p_type, p_size) x ps_suppkey, four suppliers per part in a
 * row); other keys (NULL or wider values) stay whole row keys in seen.
 * Then a key's seen set is chosen by a hash of its prefix alone.  Under a memory limit, when a batch of new keys could take the
 * seen set past it, the set stops growing: rows of keys in it are dropped,
 * the others go to XO_SPILL_PARTS partitions by a hash of the key
 * (spill.c), each deduplicated at the end by a Distinct of its own over a
 * reader of its rows (one level deeper, up to XO_SPILL_MAX_LEVEL).
 */
#include "exec/exec_int.h"
#include "base/hash.h"
#include "base/hashmap.h"

#include <stdlib.h>
#include <string.h>

/* Rounds of a parallel Distinct under an aggregate grow as the aggregate's
 * do (agg.c's AGG_ROUND_ROWS / AGG_ROUND_BATCHES). */
#define DIST_ROUND_ROWS (XO_BATCH_ROWS / 2)
#define DIST_ROUND_BATCHES 8

static bool distinct_push_keyfilter(xo_op *op, int col, hs_keyfilter *kf)
{
    return xo_push_keyfilter(op->children[0], col, kf);
}

/* ---- Distinct ---- */

#define DIST_MAXP 16   /* seen sets, one per partition of the key hash */

typedef struct distinct_op {
    xo_op op;
    int n_parts;           /* 1, or the threads of a parallel Distinct */
    bool bulk;             /* read to its end (under an aggregate): rounds of
                            * small batches grow as the aggregate's do */
    hs_map seen[DIST_MAXP];/* a key lives in seen[hash % n_parts] */
    bool packed;           /* packed keys (see the top): */
    hs_map pfx[DIST_MAXP]; /*   prefix row key -> prefix id, per seen set */
    hs_imap pairs[DIST_MAXP]; /* prefix id << 32 | (uint32)value */
    int64_t key_bytes, accounted;
    hs_buf kb;
    /* parallel rounds (see the top): their output batches, in input order */
    hs_batch **pend;
    int n_pend, next_pend;
    /* spilling (see the top) */
    int level;
    bool spilling, input_done;
    xo_spill_parts parts;
    int next_part;
    xo_op *sub;
    int64_t sub_spilled;
} distinct_op;

static hs_status distinct_make(xo_op *child, int level, xo_op **out, hs_error *err);

void xo_distinct_set_bulk(xo_op *op)
{
    distinct_op *s = (distinct_op *)op;
    s->bulk = true;
    const hs_field *sc = &op->schema;
    hs_type t = sc->n_children >= 2 ? sc->children[sc->n_children - 1].type : HS_TYPE_NA;
    s->packed = s->level == 0 && !getenv("HS_DISTINCT_UNPACKED") &&
                (t == HS_TYPE_INT8 || t == HS_TYPE_INT16 || t == HS_TYPE_INT32 ||
                 t == HS_TYPE_INT64 || t == HS_TYPE_UINT8 || t == HS_TYPE_UINT16 ||
                 t == HS_TYPE_UINT32 || t == HS_TYPE_DATE32);
}

/* Slots of the seen sets (an imap slot is half a map slot: counted as such). */
static int64_t distinct_seen_cap(const distinct_op *s)
{
    int64_t cap = 0;
    for (int p = 0; p < s->n_parts; p++)
        cap += (int64_t)s->seen[p].cap + (int64_t)s->pfx[p].cap + (int64_t)s->pairs[p].cap / 2;
    return cap;
}

/* Packed keys: row i's prefix (the row key of all but the last column) is
 * appended to kb; *packed and *v when the last column holds a non-null
 * integer within int32, else its key bytes follow the prefix (a whole row
 * key).  *plen: the prefix's bytes. */
static hs_status dist_key_packed(const hs_batch *b, int64_t i, hs_buf *kb, size_t *plen,
                                 bool *packed, int64_t *v)
{
    size_t at = kb->len;
    for (int c = 0; c + 1 < b->n_cols; c++)
        HS_TRY(xo_key_append(kb, b->cols[c], i));
    *plen = kb->len - at;
    const hs_column *last = b->cols[b->n_cols - 1];
    *packed = false;
    if (hs_col_is_valid(last, i)) {
        bool big = false;
        int64_t x = xo_int_at(last, i, &big);
        if (!big && x >= INT32_MIN && x <= INT32_MAX) {
            *packed = true;
            *v = x;
            return HS_OK;
        }
    }
    return xo_key_append(kb, last, i);
}

static uint64_t pair_key(uint64_t gid, int64_t v)
{
    return gid << 32 | (uint32_t)(int32_t)v;
}

/* True when n_rows rows of n_cols columns (bytes in batches), all new
 * keys, could take the seen sets past the limit (the maps doubling as
 * they grow). */
static bool distinct_should_spill(const distinct_op *s, int64_t n_rows, int n_cols, int64_t bytes)
{
    const xo_ctx *ctx = s->op.ctx;
    if (s->spilling || !ctx || ctx->mem_limit <= 0 || s->level >= XO_SPILL_MAX_LEVEL)
        return false;
    int64_t slot = (int64_t)sizeof(hs_map_slot);
    int64_t need = distinct_seen_cap(s) * slot + n_rows * (3 * slot + 2 * n_cols) + bytes;
    return xo_mem_used(ctx) + need > ctx->mem_limit;
}

/* The seen set of a key: by a hash of its own (the map hashes again). */
static int distinct_part(const distinct_op *s, const void *key, size_t len)
{
    return s->n_parts == 1 ? 0 : (int)(hs_xxh64(key, len, 0x9e3779b97f4a7c15ULL) % (uint64_t)s->n_parts);
}

static hs_status distinct_account(distinct_op *s, hs_error *err)
{
    int64_t bytes = distinct_seen_cap(s) * (int64_t)sizeof(hs_map_slot) + s->key_bytes;
    if (bytes > s->accounted) {
        HS_TRY(xo_mem_reserve(s->op.ctx, bytes - s->accounted, s->op.name, err));
        s->accounted = bytes;
        xo_op_held(&s->op, s->accounted);
    }
    return HS_OK;
}

/* The rows of b (taken) whose keys are new, in order, as *out (NULL when
 * none); rows go to the spill partitions instead once spilling. */
static hs_status distinct_batch(distinct_op *s, hs_batch *b, hs_batch **out, hs_error *err)
{
    xo_op *op = &s->op;
    *out = NULL;
    if (distinct_should_spill(s, b->n_rows, b->n_cols, xo_batch_bytes(b)))
        s->spilling = true;
    hs_buf keep = {0};
    uint8_t *part = s->spilling ? hs_malloc((size_t)(b->n_rows ? b->n_rows : 1)) : NULL;
    hs_status st = s->spilling && !part ? HS_NOMEM : HS_OK;
    hs_buf prev = {0};          /* packed: the previous row's prefix, its set and id */
    int prev_p = -1;
    uint64_t prev_gid = 0;
    bool prev_gid_ok = false;
    for (int64_t i = 0; i < b->n_rows && st == HS_OK; i++) {
        hs_buf_reset(&s->kb);
        if (s->packed) {
            size_t plen;
            bool pk;
            int64_t v = 0;
            st = dist_key_packed(b, i, &s->kb, &plen, &pk, &v);
            if (st != HS_OK)
                break;
            bool same = prev_p >= 0 && prev.len == plen && memcmp(prev.data, s->kb.data, plen) == 0;
            if (!same) {
                hs_buf_reset(&prev);
                if (hs_buf_append(&prev, s->kb.data, plen) != HS_OK) {
                    st = HS_NOMEM;
                    break;
                }
                prev_p = distinct_part(s, s->kb.data, plen);
                prev_gid_ok = false;
            }
            int p = prev_p;
            if (!pk) {
                uint64_t x;
                bool f = true;
                if (part)
                    part[i] = hs_map_get(&s->seen[p], s->kb.data, s->kb.len, &x)
                                  ? UINT8_MAX
                                  : (uint8_t)(hs_xxh64(s->kb.data, s->kb.len, xo_spill_seed(s->level)) %
                                              XO_SPILL_PARTS);
                else if ((st = hs_map_get_or_put(&s->seen[p], s->kb.data, s->kb.len, 0, &x, &f)) ==
                             HS_OK && !f) {
                    s->key_bytes += (int64_t)s->kb.len;
                    st = HS_VEC_PUSH(&keep, int64_t, i);
                }
                continue;
            }
            if (!prev_gid_ok) {
                bool f = true;
                if (part)
                    f = hs_map_get(&s->pfx[p], s->kb.data, plen, &prev_gid);
                else if ((st = hs_map_get_or_put(&s->pfx[p], s->kb.data, plen, s->pfx[p].count,
                                                 &prev_gid, &f)) == HS_OK && !f)
                    s->key_bytes += (int64_t)plen;
                if (st != HS_OK)
                    break;
                prev_gid_ok = f || !part;
                if (!f && part) {   /* prefix not in memory: the key is not either */
                    s->kb.len = plen;
                    st = xo_key_append(&s->kb, b->cols[b->n_cols - 1], i);
                    part[i] = (uint8_t)(hs_xxh64(s->kb.data, s->kb.len, xo_spill_seed(s->level)) %
                                        XO_SPILL_PARTS);
                    continue;
                }
            }
            uint64_t x;
            bool f = true;
            if (part) {
                if (hs_imap_get(&s->pairs[p], pair_key(prev_gid, v), &x)) {
                    part[i] = UINT8_MAX;
                } else {
                    s->kb.len = plen;
                    st = xo_key_append(&s->kb, b->cols[b->n_cols - 1], i);
                    part[i] = (uint8_t)(hs_xxh64(s->kb.data, s->kb.len, xo_spill_seed(s->level)) %
                                        XO_SPILL_PARTS);
                }
            } else if ((st = hs_imap_get_or_put(&s->pairs[p], pair_key(prev_gid, v), 0, &x, &f)) ==
                           HS_OK && !f) {
                st = HS_VEC_PUSH(&keep, int64_t, i);
            }
            continue;
        }
        for (int c = 0; c < b->n_cols && st == HS_OK; c++)
            st = xo_key_append(&s->kb, b->cols[c], i);
        if (st != HS_OK)
            break;
        hs_map *seen = &s->seen[distinct_part(s, s->kb.data, s->kb.len)];
        uint64_t v;
        bool found = true;
        if (part) {
            part[i] = hs_map_get(seen, s->kb.data, s->kb.len, &v)
                          ? UINT8_MAX
                          : (uint8_t)(hs_xxh64(s->kb.data, s->kb.len, xo_spill_seed(s->level)) %
                                      XO_SPILL_PARTS);
            continue;
        }
        st = hs_map_get_or_put(seen, s->kb.data, s->kb.len, 0, &v, &found);
        if (st == HS_OK && !found) {
            s->key_bytes += (int64_t)s->kb.len;
            st = HS_VEC_PUSH(&keep, int64_t, i);
        }
    }
    hs_buf_free(&prev);
    if (st != HS_OK)
        st = hs_err_nomem(err, 0);
    if (st == HS_OK && part)
        st = xo_spill_parts_write(op->ctx, &s->parts, b, part, err);
    hs_free(part);
    if (st == HS_OK)
        st = distinct_account(s, err);
    int64_t nk = (int64_t)HS_VEC_LEN(&keep, int64_t);
    if (st == HS_OK && nk == b->n_rows) {
        hs_buf_free(&keep);
        *out = b;
        return HS_OK;
    }
    if (st == HS_OK && nk > 0)
        st = xo_batch_take(&op->schema, b, (int64_t *)keep.data, nk, out, err);
    hs_buf_free(&keep);
    hs_batch_free(b);
    return st;
}

/* One input batch of a parallel round: its rows' keys back to back
 * (key i at off[i]..off[i+1]), their seen sets, and which rows are new. */
typedef struct dist_in {
    distinct_op *s;
    hs_batch *b;
    hs_buf keys;
    int64_t *off;
    uint8_t *part;
    uint8_t *keep;
    /* packed keys: row i's prefix is keys[off[i], off[i] + plen[i]) (rows of
     * one prefix in a row share it), pk[i] says whether val[i] is its value;
     * else its whole row key is keys[off[i], off[i] + klen[i]) */
    uint32_t *plen, *klen;
    uint8_t *pk;
    int32_t *val;
} dist_in;

typedef struct dist_part {
    distinct_op *s;
    dist_in *in;
    int n_in, p;
    int64_t key_bytes;
} dist_part;

static hs_status dist_keys_packed(dist_in *d, hs_error *err)
{
    const hs_batch *b = d->b;
    int64_t n = b->n_rows;
    d->plen = hs_malloc((size_t)(n ? n : 1) * sizeof *d->plen);
    d->klen = hs_malloc((size_t)(n ? n : 1) * sizeof *d->klen);
    d->pk = hs_malloc((size_t)(n ? n : 1));
    d->val = hs_malloc((size_t)(n ? n : 1) * sizeof *d->val);
    if (!d->plen || !d->klen || !d->pk || !d->val)
        return hs_err_nomem(err, 0);
    int64_t prev = -1;
    for (int64_t i = 0; i < n; i++) {
        size_t at = d->keys.len, plen;
        bool pk;
        int64_t v = 0;
        if (dist_key_packed(b, i, &d->keys, &plen, &pk, &v) != HS_OK)
            return hs_err_nomem(err, 0);
        if (prev >= 0 && d->plen[prev] == plen &&
            memcmp(d->keys.data + d->off[prev], d->keys.data + at, plen) == 0) {
            /* the previous row's prefix: share its bytes and its set */
            d->part[i] = d->part[prev];
            if (pk) {
                d->keys.len = at;
                d->off[i] = d->off[prev];
            } else {
                d->off[i] = (int64_t)at;
            }
        } else {
            d->off[i] = (int64_t)at;
            d->part[i] = (uint8_t)distinct_part(d->s, d->keys.data + at, plen);
            prev = i;
        }
        d->plen[i] = (uint32_t)plen;
        d->klen[i] = (uint32_t)(d->keys.len - at);
        d->pk[i] = pk;
        d->val[i] = (int32_t)v;
    }
    return HS_OK;
}

static hs_status dist_keys_task(void *arg, hs_error *err)
{
    dist_in *d = arg;
    const hs_batch *b = d->b;
    int64_t n = b->n_rows;
    if (d->s->packed) {
        d->off = hs_malloc((size_t)(n + 1) * sizeof *d->off);
        d->part = hs_malloc((size_t)(n ? n : 1));
        d->keep = hs_calloc((size_t)(n ? n : 1), 1);
        if (!d->off || !d->part || !d->keep)
            return hs_err_nomem(err, 0);
        return dist_keys_packed(d, err);
    }
    d->off = hs_malloc((size_t)(n + 1) * sizeof *d->off);
    d->part = hs_malloc((size_t)(n ? n : 1));
    d->keep = hs_calloc((size_t)(n ? n : 1), 1);
    if (!d->off || !d->part || !d->keep)
        return hs_err_nomem(err, 0);
    d->off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t at = d->keys.len;
        for (int c = 0; c < b->n_cols; c++)
            if (xo_key_append(&d->keys, b->cols[c], i) != HS_OK)
                return hs_err_nomem(err, 0);
        d->off[i + 1] = (int64_t)d->keys.len;
        d->part[i] = (uint8_t)distinct_part(d->s, d->keys.data + at, d->keys.len - at);
    }
    return HS_OK;
}

/* Partition p's keys of every batch of the round, in input order, into
 * its own seen set: the first of equal keys is the one kept. */
static hs_status dist_part_task(void *arg, hs_error *err)
{
    dist_part *t = arg;
    hs_map *seen = &t->s->seen[t->p];
    if (t->s->packed) {
        hs_map *pfx = &t->s->pfx[t->p];
        hs_imap *pairs = &t->s->pairs[t->p];
        const uint8_t *lp = NULL;   /* the last prefix looked up, its bytes and id */
        uint32_t ll = 0;
        uint64_t gid = 0;
        for (int k = 0; k < t->n_in; k++) {
            dist_in *d = &t->in[k];
            for (int64_t i = 0; i < d->b->n_rows; i++) {
                if (d->part[i] != t->p)
                    continue;
                const uint8_t *key = d->keys.data + d->off[i];
                uint64_t v;
                bool found;
                if (!d->pk[i]) {
                    if (hs_map_get_or_put(seen, key, d->klen[i], 0, &v, &found) != HS_OK)
                        return hs_err_nomem(err, 0);
                    if (!found) {
                        d->keep[i] = 1;
                        t->key_bytes += d->klen[i];
                    }
                    continue;
                }
                if (!lp || (key != lp && (d->plen[i] != ll || memcmp(key, lp, ll) != 0))) {
                    if (hs_map_get_or_put(pfx, key, d->plen[i], pfx->count, &gid, &found) != HS_OK)
                        return hs_err_nomem(err, 0);
                    if (!found)
                        t->key_bytes += d->plen[i];
                }
                lp = key;
                ll = d->plen[i];
                if (hs_imap_get_or_put(pairs, pair_key(gid, d->val[i]), 0, &v, &found) != HS_OK)
                    return hs_err_nomem(err, 0);
                d->keep[i] = !found;
            }
        }
        return HS_OK;
    }
    for (int k = 0; k < t->n_in; k++) {
        dist_in *d = &t->in[k];
        for (int64_t i = 0; i < d->b->n_rows; i++) {
            if (d->part[i] != t->p)
                continue;
            uint64_t v;
            bool found;
            size_t len = (size_t)(d->off[i + 1] - d->off[i]);
            if (hs_map_get_or_put(seen, d->keys.data + d->off[i], len, 0, &v, &found) != HS_OK)
                return hs_err_nomem(err, 0);
            if (!found) {
                d->keep[i] = 1;
                t->key_bytes += (int64_t)len;
            }
        }
    }
    return HS_OK;
}

static hs_status run_tasks(xo_ctx *ctx, hs_task_fn fn, void *args, size_t size, int n, hs_error *err)
{
    hs_group *g;
    HS_TRY(hs_group_create(ctx->pool, &g, err));
    hs_status sub = HS_OK;
    for (int i = 0; i < n && sub == HS_OK; i++)
        sub = hs_group_submit(g, fn, (char *)args + (size_t)i * size);
    hs_status st = hs_group_wait(g, err);
    hs_group_destroy(g);
    if (st == HS_OK && sub != HS_OK)
        st = hs_err_nomem(err, 0);
    return st;
}

/* A parallel round: up to `threads` batches; keys encoded per batch on
 * the pool, then each seen set takes its partition of all of them on the
 * pool; the new rows of each batch queue as outputs in input order.  A
 * round that could pass the memory limit goes through distinct_batch
 * (which spills). */
static hs_status distinct_round(distinct_op *s, hs_error *err)
{
    xo_ctx *ctx = s->op.ctx;
    int k = ctx->threads, max = s->bulk ? k * DIST_ROUND_BATCHES : k;
    dist_in *in = hs_calloc((size_t)max, sizeof *in);
    dist_part *pt = hs_calloc((size_t)s->n_parts, sizeof *pt);
    hs_status st = in && pt && (s->pend || (s->pend = hs_calloc((size_t)max, sizeof *s->pend)))
                       ? HS_OK : hs_err_nomem(err, 0);
    int n = 0;
    int64_t rows = 0, bytes = 0;
    int n_cols = 0;
    while (st == HS_OK && (n < k || (n < max && rows < (int64_t)k * DIST_ROUND_ROWS))) {
        hs_batch *b;
        st = xo_next(s->op.children[0], &b, err);
        if (st != HS_OK || !b) {
            s->input_done = st == HS_OK;
            break;
        }
        in[n++] = (dist_in){.s = s, .b = b};
        rows += b->n_rows;
        bytes += xo_batch_bytes(b);
        n_cols = b->n_cols;
    }
    s->n_pend = s->next_pend = 0;
    if (st == HS_OK && n > 0 && (n == 1 || distinct_should_spill(s, rows, n_cols, bytes))) {
        for (int i = 0; i < n && st == HS_OK; i++) {
            hs_batch *o;
            st = distinct_batch(s, in[i].b, &o, err);
            in[i].b = NULL;
            if (st == HS_OK && o)
                s->pend[s->n_pend++] = o;
        }
        n = 0;
    }
    if (st == HS_OK && n > 0)
        st = run_tasks(ctx, dist_keys_task, in, sizeof *in, n, err);
    if (st == HS_OK && n > 0) {
        for (int p = 0; p < s->n_parts; p++)
            pt[p] = (dist_part){.s = s, .in = in, .n_in = n, .p = p};
        st = run_tasks(ctx, dist_part_task, pt, sizeof *pt, s->n_parts, err);
        for (int p = 0; p < s->n_parts; p++)
            s->key_bytes += pt[p].key_bytes;
        if (st == HS_OK)
            st = distinct_account(s, err);
    }
    hs_buf idx = {0};
    for (int i = 0; i < n && st == HS_OK; i++) {
        hs_batch *b = in[i].b;
        hs_buf_reset(&idx);
        for (int64_t r = 0; r < b->n_rows && st == HS_OK; r++)
            if (in[i].keep[r] && HS_VEC_PUSH(&idx, int64_t, r) != HS_OK)
                st = hs_err_nomem(err, 0);
        int64_t nk = (int64_t)HS_VEC_LEN(&idx, int64_t);
        if (st == HS_OK && nk == b->n_rows) {
            s->pend[s->n_pend++] = b;
            in[i].b = NULL;
        } else if (st == HS_OK && nk > 0) {
            st = xo_batch_take(&s->op.schema, b, (int64_t *)idx.data, nk, &s->pend[s->n_pend], err);
            if (st == HS_OK)
                s->n_pend++;
        }
    }
    hs_buf_free(&idx);
    for (int i = 0; in && i < max; i++) {
        hs_batch_free(in[i].b);
        hs_buf_free(&in[i].keys);
        hs_free(in[i].off);
        hs_free(in[i].part);
        hs_free(in[i].keep);
        hs_free(in[i].plen);
        hs_free(in[i].klen);
        hs_free(in[i].pk);
        hs_free(in[i].val);
    }
    hs_free(in);
    hs_free(pt);
    return st;
}

/* After the input: each partition by a Distinct of its own. */
static hs_status distinct_spilled(distinct_op *s, hs_batch **out, hs_error *err)
{
    xo_op *op = &s->op;
    for (;;) {
        if (s->sub) {
            HS_TRY(xo_next(s->sub, out, err));
            xo_op_held(op, s->sub->mem_peak);
            if (*out)
                return HS_OK;
            distinct_op *ss = (distinct_op *)s->sub;
            s->sub_spilled += ss->parts.total + ss->sub_spilled;
            xo_free(s->sub);
            s->sub = NULL;
        }
        if (s->next_part >= XO_SPILL_PARTS) {
            xo_spill_parts_free(&s->parts);
            return HS_OK;
        }
        int p = s->next_part++;
        if (!s->parts.rows[p])
            continue;
        xo_op *r;
        HS_TRY(xo_spill_reader(op->ctx, &s->parts.sp, &op->schema, &s->parts.offs[p], &r, err));
        HS_TRY(distinct_make(r, s->level + 1, &s->sub, err));
    }
}

static hs_status distinct_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const distinct_op *s = (const distinct_op *)op;
    if (!s->spilling)
        return HS_OK;
    if (hs_buf_printf(out, "spilled: %lld rows to %d partitions (%lld bytes), %lld rows again "
                      "in deeper levels", (long long)s->parts.total, XO_SPILL_PARTS,
                      (long long)s->parts.sp.written, (long long)s->sub_spilled) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

static hs_status distinct_next(xo_op *op, hs_batch **out, hs_error *err)
{
    distinct_op *s = (distinct_op *)op;
    *out = NULL;
    for (;;) {
        if (s->next_pend < s->n_pend) {
            *out = s->pend[s->next_pend];
            s->pend[s->next_pend++] = NULL;
            return HS_OK;
        }
        if (s->input_done)
            return s->spilling ? distinct_spilled(s, out, err) : HS_OK;
        if (s->n_parts > 1 && !s->spilling) {
            HS_TRY(distinct_round(s, err));
            continue;
        }
        hs_batch *b;
        HS_TRY(xo_next(op->children[0], &b, err));
        if (!b) {
            s->input_done = true;
            continue;
        }
        HS_TRY(distinct_batch(s, b, out, err));
        if (*out)
            return HS_OK;
    }
}

static void distinct_destroy(xo_op *op)
{
    distinct_op *s = (distinct_op *)op;
    xo_free(s->sub);
    xo_spill_parts_free(&s->parts);
    for (int p = 0; p < DIST_MAXP; p++) {
        hs_map_free(&s->seen[p]);
        hs_map_free(&s->pfx[p]);
        hs_imap_free(&s->pairs[p]);
    }
    for (int i = s->next_pend; i < s->n_pend; i++)
        hs_batch_free(s->pend[i]);
    hs_free(s->pend);
    hs_buf_free(&s->kb);
    xo_mem_release(op->ctx, s->accounted);
}

hs_status xo_distinct(xo_op *child, xo_op **out, hs_error *err)
{
    return distinct_make(child, 0, out, err);
}

static hs_status distinct_make(xo_op *child, int level, xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(distinct_op), child->ctx, "Distinct", 1, &child, &op, err));
    op->next = distinct_next;
    op->destroy = distinct_destroy;
    op->explain_extra = distinct_extra;
    op->push_keyfilter = distinct_push_keyfilter;
    distinct_op *s = (distinct_op *)op;
    s->level = level;
    /* parallel at the top level (a spilled partition's Distinct reads
     * the spill file serially) */
    const xo_ctx *ctx = child->ctx;
    s->n_parts = ctx && ctx->pool && ctx->threads > 1 && level == 0
                     ? (ctx->threads < DIST_MAXP ? ctx->threads : DIST_MAXP) : 1;
    hs_field_clear(&op->schema);
    if (hs_field_copy(&child->schema, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    *out = op;
    return HS_OK;
}
