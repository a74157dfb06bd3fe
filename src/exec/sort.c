/*
 * exec/sort.c - Sort and TopK.
 *
 * Sort materialises its whole input (xo_rows, accounted against the
 * memory limit), sorts a permutation of row indices (xo_sort_perm, below:
 * a stable merge sort of 64-bit key images with the full comparison of
 * xo_keys_cmp on ties), and emits the permutation in batches of
 * XO_BATCH_ROWS taken from the materialised rows.
 *
 * TopK (ORDER BY ... LIMIT k) keeps at most about 2k rows: it appends each
 * input batch to its row set and, once that holds 2k rows (and at least one
 * batch more than k), sorts it and keeps the first k.  Once k rows are
 * kept, only input rows that sort before the k-th one are appended at all.
 * Rows enter in input order and the sort is stable, so ties resolve as in
 * Sort + Limit.
 *
 * External sort.  When the next input batch would take Sort past the
 * statement's memory limit (rows, their sort entries and the growth of
 * the row set counted), the rows held so far are sorted and written to a
 * spill file (exec_int.h) as a run of blocks, and memory is freed.  At the
 * end the rest becomes a run too, and runs are merged: a binary heap over
 * the runs' current rows (ties: the earlier run first, so the sort stays
 * stable), each run read one block at a time.  With more than SORT_FANIN
 * runs, passes merge groups of SORT_FANIN consecutive runs into longer
 * runs first.  Blocks are sized so that the blocks of one merge hold about
 * half the memory limit.
 *
 * TopK spills the same way when its 2k rows do not fit (a large k): a run
 * holds only the first k rows of what was held (no later row can push one
 * of those out of its run's top k), the boundary row goes with them, and
 * the merge stops after k rows.
 */
#include "exec/exec_int.h"

#include "base/threadpool.h"

#include <stdio.h>
#include <string.h>

typedef struct sort_op {
    xo_op op;
    int n_keys;
    xo_sort_key *keys;
    int64_t k;            /* TopK: rows kept; Sort: -1 */
    xo_rows rows;
    int64_t *perm;
    int64_t n_perm, emitted;
    int64_t boundary;     /* TopK: row of the k-th kept value after a compaction, -1 */
    bool sorted;
    /* external sort (see top) */
    xo_spill sp;
    int64_t (*runs)[2];   /* [start, end) of each sorted run in sp */
    int n_runs, cap_runs;
    int64_t block_rows;   /* rows per spilled block */
    struct merge_rd *rd;  /* the runs being merged */
    int n_rd;
    int *heap, n_heap;
    bool merging;
    int passes;
    int64_t spilled_rows;
} sort_op;

/* ---- sorting a permutation ----
 *
 * The comparator of xo_keys_cmp reads values through the columns, which
 * for a large input is one cache miss per comparison.  So the sort works
 * on an array of (prefix, row) pairs: prefix is a 64-bit image of the
 * first key that orders like the key (direction and NULL placement
 * included) wherever two prefixes differ; only equal prefixes fall back to
 * the full comparison.  Images: integers and dates/times with the sign bit
 * flipped; floats by their IEEE bits made monotonic (NaN highest, -0 = 0);
 * decimals by their high 64 bits; strings/binaries by their first 8 bytes,
 * big-endian; booleans 1/2; other types 0 (always the full comparison).
 * NULLs get 0 (NULLS FIRST) or UINT64_MAX (NULLS LAST); a value whose image
 * collides with that also falls back to the full comparison, which is
 * exact.  Entries carry the images of up to XO_IMG_MAX leading keys, as
 * long as ties of the earlier images mean equal keys (image_exact).  The
 * merge sort is stable; with ctx->pool (and 64K entries or more) chunks
 * are sorted as parallel tasks and merged pairwise in parallel passes. */

static uint64_t image_of(const hs_column *c, int64_t i)
{
    switch (c->type) {
    case HS_TYPE_BOOL: return 1 + hs_bit_get(c->values.data, i);
    case HS_TYPE_UINT64: return HS_COL_VALUES(c, uint64_t)[i];
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: {
        double d = xo_float_at(c, i);
        if (d != d)
            return UINT64_MAX - 1;
        if (d == 0)
            d = 0;
        uint64_t b;
        memcpy(&b, &d, 8);
        return (b >> 63) ? ~b : b | (1ull << 63);
    }
    case HS_TYPE_DECIMAL128: {
        __int128 v;
        memcpy(&v, c->values.data + 16 * i, 16);
        return (uint64_t)(v >> 64) ^ (1ull << 63);
    }
    case HS_TYPE_INTERVAL: {   /* the span, clamped to int64 (ties compare in full) */
        __int128 s = hs_interval_span(xo_interval_at(c, i));
        int64_t v = s > INT64_MAX ? INT64_MAX : s < INT64_MIN ? INT64_MIN : (int64_t)s;
        return (uint64_t)v ^ (1ull << 63);
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *o = HS_COL_OFFSETS(c);
        int32_t n = o[i + 1] - o[i];
        const uint8_t *p = c->values.data + o[i];
        uint64_t k = 0;
        for (int b = 0; b < 8; b++)
            k = (k << 8) | (b < n ? p[b] : 0);
        return k;
    }
    default:
        if (xo_is_int_type(c->type)) {
            bool big;
            return (uint64_t)xo_int_at(c, i, &big) ^ (1ull << 63);
        }
        return 0;
    }
}

/* Entries: XO_IMG_MAX words of key images, then the row. */
#define XO_IMG_MAX 4

typedef struct perm_ctx {
    const xo_sort_key *keys;
    int n_keys;
    int n_img;             /* images per entry (<= XO_IMG_MAX) */
    hs_column *const *cols;
} perm_ctx;

typedef struct sort_ent {
    uint64_t k[XO_IMG_MAX];
    int64_t row;
} sort_ent;

static inline int ent_cmp(const perm_ctx *c, const sort_ent *a, const sort_ent *b)
{
    for (int i = 0; i < c->n_img; i++)
        if (a->k[i] != b->k[i])
            return a->k[i] < b->k[i] ? -1 : 1;
    return xo_keys_cmp(c->keys, c->n_keys, c->cols, a->row, c->cols, b->row);
}

/* Merges the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi). */
static void merge_runs(const perm_ctx *c, const sort_ent *src, sort_ent *dst, int64_t lo,
                       int64_t mid, int64_t hi)
{
    if (mid >= hi || ent_cmp(c, &src[mid - 1], &src[mid]) <= 0) {
        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *dst);
        return;
    }
    int64_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi)
        dst[k++] = ent_cmp(c, &src[i], &src[j]) <= 0 ? src[i++] : src[j++];
    while (i < mid)
        dst[k++] = src[i++];
    while (j < hi)
        dst[k++] = src[j++];
}

/* Sorts e[0..n) (stable), with tmp as scratch of n entries. */
static void ent_sort_range(const perm_ctx *c, sort_ent *e, sort_ent *tmp, int64_t n)
{
    const int64_t run = 16;
    for (int64_t lo = 0; lo < n; lo += run) {
        int64_t hi = lo + run < n ? lo + run : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            sort_ent v = e[i];
            int64_t j = i;
            while (j > lo && ent_cmp(c, &e[j - 1], &v) > 0) {
                e[j] = e[j - 1];
                j--;
            }
            e[j] = v;
        }
    }
    sort_ent *src = e, *dst = tmp;
    for (int64_t w = run; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w)
            merge_runs(c, src, dst, lo, lo + w < n ? lo + w : n, lo + 2 * w < n ? lo + 2 * w : n);
        sort_ent *t = src;
        src = dst;
        dst = t;
    }
    if (src != e)
        memcpy(e, src, (size_t)n * sizeof *e);
}

/* Parallel sort: chunks sorted as tasks, then merge passes whose pairs of
 * runs are tasks too. */
typedef struct sort_task {
    const perm_ctx *c;
    sort_ent *src, *dst;
    int64_t lo, mid, hi;   /* a chunk [lo, hi) to sort (mid < 0), or runs to merge */
} sort_task;

static hs_status sort_task_run(void *arg, hs_error *err)
{
    (void)err;
    sort_task *t = arg;
    if (t->mid < 0)
        ent_sort_range(t->c, t->src + t->lo, t->dst + t->lo, t->hi - t->lo);
    else
        merge_runs(t->c, t->src, t->dst, t->lo, t->mid, t->hi);
    return HS_OK;
}

static hs_status run_tasks(hs_pool *pool, sort_task *t, int n, hs_error *err)
{
    if (n == 1)
        return sort_task_run(&t[0], err);
    hs_group *g;
    HS_TRY(hs_group_create(pool, &g, err));
    hs_status sub = HS_OK;
    for (int i = 0; i < n && sub == HS_OK; i++)
        sub = hs_group_submit(g, sort_task_run, &t[i]);
    hs_status st = hs_group_wait(g, err);
    hs_group_destroy(g);
    HS_TRY(st);
    return sub == HS_OK ? HS_OK : hs_err_nomem(err, 0);
}

static hs_status ent_sort(const perm_ctx *c, sort_ent *e, int64_t n, const xo_ctx *ctx,
                          hs_error *err)
{
    if (n <= 16) {
        sort_ent tmp[16];
        ent_sort_range(c, e, tmp, n);
        return HS_OK;
    }
    sort_ent *tmp = hs_malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return hs_err_nomem(err, (size_t)n * sizeof *tmp);
    int parts = ctx && ctx->pool && ctx->threads > 1 && n >= 65536 ? ctx->threads : 1;
    if (parts == 1) {
        ent_sort_range(c, e, tmp, n);
        hs_free(tmp);
        return HS_OK;
    }
    sort_task *t = hs_calloc((size_t)parts, sizeof *t);
    if (!t) {
        hs_free(tmp);
        return hs_err_nomem(err, 0);
    }
    int64_t chunk = (n + parts - 1) / parts;
    int nt = 0;
    for (int64_t lo = 0; lo < n; lo += chunk)
        t[nt++] = (sort_task){c, e, tmp, lo, -1, lo + chunk < n ? lo + chunk : n};
    hs_status st = run_tasks(ctx->pool, t, nt, err);
    sort_ent *src = e, *dst = tmp;
    for (int64_t w = chunk; st == HS_OK && w < n; w *= 2) {
        nt = 0;
        for (int64_t lo = 0; lo < n; lo += 2 * w)
            t[nt++] = (sort_task){c, src, dst, lo, lo + w < n ? lo + w : n,
                                  lo + 2 * w < n ? lo + 2 * w : n};
        st = run_tasks(ctx->pool, t, nt, err);
        sort_ent *x = src;
        src = dst;
        dst = x;
    }
    if (st == HS_OK && src != e)
        memcpy(e, src, (size_t)n * sizeof *e);
    hs_free(t);
    hs_free(tmp);
    return st;
}

/* True when equal images mean equal keys (NULLs included), so that the
 * next key's image may decide: booleans (images 1, 2) and floats (images
 * never 0 or UINT64_MAX); integers only without NULLs (they use all 64
 * bits, so a NULL's image may equal a value's). */
static bool image_exact(const hs_column *c)
{
    return c->type == HS_TYPE_BOOL || c->type == HS_TYPE_FLOAT32 || c->type == HS_TYPE_FLOAT64 ||
           c->type == HS_TYPE_FLOAT16 || (xo_is_int_type(c->type) && c->null_count == 0);
}

hs_status xo_sort_perm(const xo_ctx *ctx, hs_column *const *cols, int n_keys,
                       const xo_sort_key *keys, int64_t n, int64_t *perm, hs_error *err)
{
    if (n <= 1) {
        if (n == 1)
            perm[0] = 0;
        return HS_OK;
    }
    /* the entries and the merge scratch, accounted while the sort runs */
    int64_t bytes = n * (int64_t)(2 * sizeof(sort_ent));
    HS_TRY(xo_mem_reserve((xo_ctx *)ctx, bytes, "Sort", err));
    sort_ent *e = hs_malloc((size_t)n * sizeof *e);
    if (!e) {
        xo_mem_release((xo_ctx *)ctx, bytes);
        return hs_err_nomem(err, (size_t)n * sizeof *e);
    }
    /* images for the leading keys, up to the first whose image is inexact
     * (a tie there must be settled by the full comparison anyway) */
    int n_img = 0;
    while (n_img < n_keys && n_img < XO_IMG_MAX) {
        n_img++;
        if (!image_exact(cols[keys[n_img - 1].col]))
            break;
    }
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < n_img; k++) {
            const hs_column *c = cols[keys[k].col];
            uint64_t v;
            if (!hs_col_is_valid(c, i) || c->type == HS_TYPE_NA) {
                v = keys[k].nulls_first ? 0 : UINT64_MAX;
            } else {
                v = image_of(c, i);
                if (keys[k].desc)
                    v = ~v;
            }
            e[i].k[k] = v;
        }
        e[i].row = i;
    }
    perm_ctx c = {keys, n_keys, n_img, cols};
    hs_status st = ent_sort(&c, e, n, ctx, err);
    for (int64_t i = 0; st == HS_OK && i < n; i++)
        perm[i] = e[i].row;
    hs_free(e);
    xo_mem_release((xo_ctx *)ctx, bytes);
    return st;
}

/* Sorts the current rows into s->perm (n_perm = all rows). */
static hs_status sort_rows(sort_op *s, hs_error *err)
{
    int64_t n = xo_rows_count(&s->rows);
    hs_free(s->perm);
    s->perm = NULL;
    s->n_perm = n;
    if (n == 0)
        return HS_OK;
    s->perm = hs_malloc((size_t)n * sizeof *s->perm);
    if (!s->perm)
        return hs_err_nomem(err, (size_t)n * sizeof *s->perm);
    return xo_sort_perm(s->op.ctx, s->rows.b->cols, s->n_keys, s->keys, n, s->perm, err);
}

/* TopK: keeps the first k rows of the sorted row set. */
static hs_status topk_compact(sort_op *s, hs_error *err)
{
    HS_TRY(sort_rows(s, err));
    int64_t keep = s->n_perm < s->k ? s->n_perm : s->k;
    xo_rows fresh = {0};
    hs_status st = xo_rows_append_take(&fresh, s->op.ctx, s->op.name, s->rows.b, s->perm, keep, err);
    if (st != HS_OK) {
        xo_rows_free(&fresh, s->op.ctx);
        return st;
    }
    xo_rows_free(&s->rows, s->op.ctx);
    s->rows = fresh;
    hs_free(s->perm);
    s->perm = NULL;
    s->n_perm = 0;
    s->boundary = keep == s->k && keep > 0 ? keep - 1 : -1;
    return HS_OK;
}


/* ---- external sort (see top) ---- */

#define SORT_FANIN 16

typedef struct merge_rd {
    int64_t off, end;     /* next block, end of the run */
    hs_batch *b;          /* current block */
    int64_t pos;          /* next row of b */
    hs_buf take;          /* rows of b taken in this round (int64) */
} merge_rd;

/* True when appending b to the rows would take Sort past the limit: the
 * rows (whose buffers may double), b, and 88 bytes a row while sorting. */
static bool sort_should_spill(const sort_op *s, const hs_batch *b)
{
    const xo_ctx *ctx = s->op.ctx;
    int64_t n = xo_rows_count(&s->rows);
    if (!ctx || ctx->mem_limit <= 0 || n == 0)
        return false;
    int64_t bb = xo_batch_bytes(b);
    int64_t grow = s->rows.bytes > 2 * bb ? s->rows.bytes : 2 * bb;
    int64_t need = grow + (n + b->n_rows) * (int64_t)(2 * sizeof(sort_ent) + sizeof(int64_t));
    return atomic_load(&((xo_ctx *)ctx)->mem_used) + need > ctx->mem_limit;
}

static hs_status push_run(sort_op *s, int64_t start, int64_t end, hs_error *err)
{
    if (s->n_runs == s->cap_runs) {
        int cap = s->cap_runs ? 2 * s->cap_runs : 16;
        void *r = hs_realloc(s->runs, (size_t)cap * sizeof *s->runs);
        if (!r)
            return hs_err_nomem(err, 0);
        s->runs = r;
        s->cap_runs = cap;
    }
    s->runs[s->n_runs][0] = start;
    s->runs[s->n_runs][1] = end;
    s->n_runs++;
    return HS_OK;
}

/* Sorts the rows held and writes them (TopK: the first k) as one run;
 * frees them. */
static hs_status write_run(sort_op *s, hs_error *err)
{
    int64_t n = xo_rows_count(&s->rows);
    if (n == 0)
        return HS_OK;
    if (s->block_rows == 0) {
        const xo_ctx *ctx = s->op.ctx;
        int64_t row_bytes = s->rows.bytes / n + 1;
        int64_t br = ctx->mem_limit / (4 * SORT_FANIN) / row_bytes;
        s->block_rows = br < 256 ? 256 : br > XO_BATCH_ROWS ? XO_BATCH_ROWS : br;
    }
    HS_TRY(sort_rows(s, err));
    if (s->k >= 0 && n > s->k)
        n = s->k;
    int64_t start = s->sp.size, off;
    for (int64_t i = 0; i < n; i += s->block_rows) {
        int64_t m = n - i < s->block_rows ? n - i : s->block_rows;
        hs_batch *t;
        HS_TRY(xo_batch_take(&s->op.schema, s->rows.b, s->perm + i, m, &t, err));
        hs_status st = xo_spill_write(s->op.ctx, &s->sp, t, &off, err);
        hs_batch_free(t);
        HS_TRY(st);
    }
    HS_TRY(push_run(s, start, s->sp.size, err));
    s->spilled_rows += n;
    xo_rows_free(&s->rows, s->op.ctx);
    hs_free(s->perm);
    s->perm = NULL;
    s->n_perm = 0;
    s->boundary = -1;
    return HS_OK;
}

static void merge_close(sort_op *s)
{
    for (int i = 0; i < s->n_rd; i++) {
        hs_batch_free(s->rd[i].b);
        hs_buf_free(&s->rd[i].take);
    }
    hs_free(s->rd);
    hs_free(s->heap);
    s->rd = NULL;
    s->heap = NULL;
    s->n_rd = s->n_heap = 0;
}

/* Heap order: the run whose current row sorts first; ties: lower run. */
static bool rd_less(const sort_op *s, int a, int b)
{
    const merge_rd *x = &s->rd[a], *y = &s->rd[b];
    int c = xo_keys_cmp(s->keys, s->n_keys, x->b->cols, x->pos, y->b->cols, y->pos);
    return c < 0 || (c == 0 && a < b);
}

static void sift_down(sort_op *s, int i)
{
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < s->n_heap && rd_less(s, s->heap[l], s->heap[m]))
            m = l;
        if (l + 1 < s->n_heap && rd_less(s, s->heap[l + 1], s->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        int t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
}

/* Opens runs [first, first + n) for merging. */
static hs_status merge_open(sort_op *s, int first, int n, hs_error *err)
{
    merge_close(s);
    s->rd = hs_calloc((size_t)n, sizeof *s->rd);
    s->heap = hs_calloc((size_t)n, sizeof *s->heap);
    if (!s->rd || !s->heap)
        return hs_err_nomem(err, 0);
    s->n_rd = n;
    for (int i = 0; i < n; i++) {
        merge_rd *r = &s->rd[i];
        r->off = s->runs[first + i][0];
        r->end = s->runs[first + i][1];
        if (r->off < r->end) {
            HS_TRY(xo_spill_read(&s->sp, &s->op.schema, r->off, &r->b, &r->off, err));
            s->heap[s->n_heap++] = i;
        }
    }
    for (int i = s->n_heap / 2 - 1; i >= 0; i--)
        sift_down(s, i);
    return HS_OK;
}

/* The next merged batch (NULL at the end): rows are taken from the runs'
 * current blocks until XO_BATCH_ROWS or until a block is used up. */
static hs_status merge_step(sort_op *s, hs_batch **out, hs_error *err)
{
    *out = NULL;
    if (s->n_heap == 0)
        return HS_OK;
    hs_buf order = {0};   /* run of each output row (int32) */
    int used_up = -1;
    hs_status st = HS_OK;
    int64_t n = 0;
    while (n < XO_BATCH_ROWS && s->n_heap > 0) {
        int top = s->heap[0];
        merge_rd *r = &s->rd[top];
        if (HS_VEC_PUSH(&r->take, int64_t, r->pos) != HS_OK ||
            HS_VEC_PUSH(&order, int32_t, top) != HS_OK) {
            st = hs_err_nomem(err, 0);
            break;
        }
        n++;
        if (++r->pos == r->b->n_rows) {
            used_up = top;
            break;
        }
        sift_down(s, 0);
    }
    /* gather: each run's rows in one take, then interleave */
    hs_batch *parts[SORT_FANIN] = {NULL};
    int64_t base[SORT_FANIN] = {0}, seen[SORT_FANIN] = {0};
    int n_parts = 0, last = -1;
    xo_rows all = {0};
    for (int i = 0; st == HS_OK && i < s->n_rd; i++) {
        merge_rd *r = &s->rd[i];
        int64_t m = (int64_t)HS_VEC_LEN(&r->take, int64_t);
        if (m == 0)
            continue;
        base[i] = xo_rows_count(&all);
        st = xo_batch_take(&s->op.schema, r->b, (int64_t *)r->take.data, m, &parts[i], err);
        if (st == HS_OK)
            st = xo_rows_append(&all, NULL, s->op.name, parts[i], err);
        n_parts++;
        last = i;
        hs_buf_reset(&r->take);
    }
    if (st == HS_OK && n_parts == 1) {
        *out = parts[last];
        parts[last] = NULL;
    } else if (st == HS_OK) {
        int64_t *idx = hs_malloc((size_t)n * sizeof *idx);
        const int32_t *ord = (const int32_t *)order.data;
        if (!idx)
            st = hs_err_nomem(err, 0);
        for (int64_t i = 0; st == HS_OK && i < n; i++)
            idx[i] = base[ord[i]] + seen[ord[i]]++;
        if (st == HS_OK)
            st = xo_batch_take(&s->op.schema, all.b, idx, n, out, err);
        hs_free(idx);
    }
    for (int i = 0; i < s->n_rd; i++)
        hs_batch_free(parts[i]);
    xo_rows_free(&all, NULL);
    hs_buf_free(&order);
    if (st == HS_OK && used_up >= 0) {
        merge_rd *r = &s->rd[used_up];
        hs_batch_free(r->b);
        r->b = NULL;
        r->pos = 0;
        if (r->off < r->end) {
            st = xo_spill_read(&s->sp, &s->op.schema, r->off, &r->b, &r->off, err);
        } else {
            s->heap[0] = s->heap[--s->n_heap];
        }
        if (st == HS_OK && s->n_heap > 0)
            sift_down(s, 0);
    }
    if (st != HS_OK) {
        hs_batch_free(*out);
        *out = NULL;
    }
    return st;
}

/* Merges groups of SORT_FANIN runs into longer runs until at most
 * SORT_FANIN remain, then opens the final merge. */
static hs_status merge_prepare(sort_op *s, hs_error *err)
{
    while (s->n_runs > SORT_FANIN) {
        int64_t (*old)[2] = s->runs;
        int n_old = s->n_runs;
        s->runs = NULL;
        s->n_runs = s->cap_runs = 0;
        hs_status st = HS_OK;
        for (int g = 0; g < n_old && st == HS_OK; g += SORT_FANIN) {
            int n = n_old - g < SORT_FANIN ? n_old - g : SORT_FANIN;
            /* the runs to merge are read from `old` through s->runs */
            int64_t (*keep)[2] = s->runs;
            int kn = s->n_runs, kc = s->cap_runs;
            s->runs = old + g;
            st = merge_open(s, 0, n, err);
            s->runs = keep;
            s->n_runs = kn;
            s->cap_runs = kc;
            int64_t start = s->sp.size, off;
            while (st == HS_OK) {
                hs_batch *b;
                st = xo_check_cancel(s->op.ctx, err);
                if (st == HS_OK)
                    st = merge_step(s, &b, err);
                if (st != HS_OK || !b)
                    break;
                st = xo_spill_write(s->op.ctx, &s->sp, b, &off, err);
                hs_batch_free(b);
            }
            merge_close(s);
            if (st == HS_OK)
                st = push_run(s, start, s->sp.size, err);
        }
        hs_free(old);
        HS_TRY(st);
        s->passes++;
    }
    s->passes++;
    s->merging = true;
    return merge_open(s, 0, s->n_runs, err);
}

static hs_status sort_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const sort_op *s = (const sort_op *)op;
    if (s->n_runs == 0 && s->passes == 0)
        return HS_OK;
    if (hs_buf_printf(out, "spilled: %lld rows in %d runs, %lld bytes written, %d merge passes",
                      (long long)s->spilled_rows, s->n_runs, (long long)s->sp.written,
                      s->passes) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
}

/* Rows of b taken at a time: all of b, or under a limit too small for a
 * quarter of b with its sort entries, slices that fit. */
static int64_t sort_piece_rows(const sort_op *s, const hs_batch *b)
{
    const xo_ctx *ctx = s->op.ctx;
    int64_t piece = b->n_rows;
    if (ctx && ctx->mem_limit > 0 && b->n_rows > 1) {
        int64_t row = xo_batch_bytes(b) / b->n_rows + (int64_t)(2 * sizeof(sort_ent) + 8);
        int64_t fit = ctx->mem_limit / 4 / row;
        if (fit < piece)
            piece = fit < 1 ? 1 : fit;
    }
    return piece;
}

/* Sort: appends b to the rows, spilling them as a run first when b would
 * take them past the memory limit.  Under a limit too small for a
 * quarter of b with its sort entries, b goes in in slices. */
static hs_status sort_add(sort_op *s, const hs_batch *b, hs_error *err)
{
    int64_t piece = sort_piece_rows(s, b);
    for (int64_t at = 0; at < b->n_rows; at += piece) {
        int64_t n = b->n_rows - at < piece ? b->n_rows - at : piece;
        hs_batch *part = NULL;
        const hs_batch *src = b;
        if (n < b->n_rows) {
            HS_TRY(xo_batch_rows(b, at, n, &part, err));
            src = part;
        }
        hs_status st = sort_should_spill(s, src) ? write_run(s, err) : HS_OK;
        if (st == HS_OK)
            st = xo_rows_append(&s->rows, s->op.ctx, s->op.name, src, err);
        xo_op_held(&s->op, s->rows.bytes);
        hs_batch_free(part);
        HS_TRY(st);
    }
    return HS_OK;
}

/* TopK: one slice of an input batch.  With k rows kept, only rows that
 * sort before the k-th can enter (an equal row came later in the input, so
 * it loses); the rows held are cut back to the first k once they reach 2k,
 * or written as a run (their first k) when memory is short. */
static hs_status topk_piece(sort_op *s, const hs_batch *b, hs_error *err)
{
    xo_op *op = &s->op;
    hs_batch *kept = NULL;
    const hs_batch *src = b;
    if (s->boundary >= 0) {
        int64_t *keep = hs_malloc((size_t)b->n_rows * sizeof *keep), nk = 0;
        if (!keep)
            return hs_err_nomem(err, 0);
        for (int64_t i = 0; i < b->n_rows; i++)
            if (xo_keys_cmp(s->keys, s->n_keys, b->cols, i, s->rows.b->cols, s->boundary) < 0)
                keep[nk++] = i;
        hs_status st = nk ? xo_batch_take(&op->schema, b, keep, nk, &kept, err) : HS_OK;
        hs_free(keep);
        HS_TRY(st);
        if (!nk)
            return HS_OK;
        src = kept;
    }
    hs_status st = sort_should_spill(s, src) ? write_run(s, err) : HS_OK;
    int64_t bn = src->n_rows;
    if (st == HS_OK)
        st = xo_rows_append(&s->rows, op->ctx, op->name, src, err);
    xo_op_held(op, s->rows.bytes);
    hs_batch_free(kept);
    HS_TRY(st);
    int64_t n = xo_rows_count(&s->rows);
    if (n < 2 * s->k || n < s->k + bn)
        return HS_OK;
    /* compacting copies the k rows kept: past the limit, a run instead */
    const xo_ctx *ctx = op->ctx;
    bool tight = ctx && ctx->mem_limit > 0 &&
                 atomic_load(&((xo_ctx *)ctx)->mem_used) + s->rows.bytes / 2 +
                         n * (int64_t)(2 * sizeof(sort_ent) + sizeof(int64_t)) >
                     ctx->mem_limit;
    return tight ? write_run(s, err) : topk_compact(s, err);
}

/* TopK: an input batch, in slices small enough for the memory limit. */
static hs_status topk_add(sort_op *s, const hs_batch *b, hs_error *err)
{
    int64_t piece = sort_piece_rows(s, b);
    for (int64_t at = 0; at < b->n_rows; at += piece) {
        int64_t n = b->n_rows - at < piece ? b->n_rows - at : piece;
        hs_batch *part = NULL;
        if (n < b->n_rows)
            HS_TRY(xo_batch_rows(b, at, n, &part, err));
        hs_status st = topk_piece(s, part ? part : b, err);
        hs_batch_free(part);
        HS_TRY(st);
    }
    return HS_OK;
}

static hs_status sort_consume(sort_op *s, hs_error *err)
{
    xo_op *op = &s->op;
    for (;;) {
        hs_batch *b;
        HS_TRY(xo_next(op->children[0], &b, err));
        if (!b)
            break;
        hs_status st = s->k < 0 ? sort_add(s, b, err) : topk_add(s, b, err);
        hs_batch_free(b);
        HS_TRY(st);
    }
    s->sorted = true;
    if (s->n_runs > 0) {
        HS_TRY(write_run(s, err));
        return merge_prepare(s, err);
    }
    HS_TRY(sort_rows(s, err));
    if (s->k >= 0 && s->n_perm > s->k)
        s->n_perm = s->k;
    return HS_OK;
}

static hs_status sort_next(xo_op *op, hs_batch **out, hs_error *err)
{
    sort_op *s = (sort_op *)op;
    if (!s->sorted)
        HS_TRY(sort_consume(s, err));
    HS_TRY(xo_check_cancel(op->ctx, err));
    if (s->merging) {
        HS_TRY(merge_step(s, out, err));
        if (*out && s->k >= 0) {   /* TopK: the first k rows of the merge */
            int64_t left = s->k - s->emitted;
            if (left < (*out)->n_rows) {
                hs_batch *cut = NULL;
                hs_status st = left > 0 ? xo_batch_rows(*out, 0, left, &cut, err) : HS_OK;
                hs_batch_free(*out);
                *out = cut;
                HS_TRY(st);
            }
            s->emitted += *out ? (*out)->n_rows : 0;
        }
        if (!*out) {
            merge_close(s);
            xo_spill_close(&s->sp);
        }
        return HS_OK;
    }
    if (s->emitted >= s->n_perm)
        return HS_OK;
    int64_t n = s->n_perm - s->emitted;
    if (n > XO_BATCH_ROWS)
        n = XO_BATCH_ROWS;
    HS_TRY(xo_batch_take(&op->schema, s->rows.b, s->perm + s->emitted, n, out, err));
    s->emitted += n;
    if (s->emitted >= s->n_perm) {   /* release the memory early */
        xo_rows_free(&s->rows, op->ctx);
        hs_free(s->perm);
        s->perm = NULL;
    }
    return HS_OK;
}

static void sort_destroy(xo_op *op)
{
    sort_op *s = (sort_op *)op;
    xo_rows_free(&s->rows, op->ctx);
    hs_free(s->perm);
    hs_free(s->keys);
    merge_close(s);
    hs_free(s->runs);
    xo_spill_close(&s->sp);
}

static hs_status sort_make(xo_op *child, int n_keys, const xo_sort_key *keys, int64_t k,
                           xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(sort_op), child->ctx, k >= 0 ? "TopK" : "Sort", 1, &child, &op, err));
    sort_op *s = (sort_op *)op;
    op->next = sort_next;
    op->destroy = sort_destroy;
    op->explain_extra = sort_extra;
    s->k = k;
    s->boundary = -1;
    hs_field_clear(&op->schema);
    if (hs_field_copy(&child->schema, &op->schema) != HS_OK) {
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
        xo_free(op);
        return hs_err_nomem(err, 0);
    }
    s->keys = hs_calloc((size_t)(n_keys > 0 ? n_keys : 1), sizeof *s->keys);
    hs_buf d = {0};
    hs_status st = s->keys ? HS_OK : hs_err_nomem(err, 0);
    s->n_keys = n_keys;
    for (int i = 0; i < n_keys && st == HS_OK; i++) {
        if (keys[i].col < 0 || keys[i].col >= child->schema.n_children) {
            st = hs_err_set(err, HS_INVALID, "%s: key column %d out of range (%d columns)",
                            op->name, keys[i].col, child->schema.n_children);
            break;
        }
        s->keys[i] = keys[i];
        if (hs_buf_printf(&d, "%s#%d%s%s", i ? ", " : "keys: ", keys[i].col + 1,
                          keys[i].desc ? " DESC" : "",
                          keys[i].nulls_first != keys[i].desc
                              ? (keys[i].nulls_first ? " NULLS FIRST" : " NULLS LAST")
                              : "") != HS_OK)
            st = hs_err_nomem(err, 0);
    }
    if (st == HS_OK && k >= 0 && hs_buf_printf(&d, "; k: %lld", (long long)k) != HS_OK)
        st = hs_err_nomem(err, 0);
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

hs_status xo_sort(xo_op *child, int n_keys, const xo_sort_key *keys, xo_op **out, hs_error *err)
{
    return sort_make(child, n_keys, keys, -1, out, err);
}

hs_status xo_topk(xo_op *child, int n_keys, const xo_sort_key *keys, int64_t k, xo_op **out,
                  hs_error *err)
{
    if (k < 0) {
        xo_free(child);
        return hs_err_set(err, HS_INVALID, "TopK: k must not be negative, got %lld", (long long)k);
    }
    return sort_make(child, n_keys, keys, k, out, err);
}
